"""The built-in generation backends, registered through entry points as a plug-in's are."""
