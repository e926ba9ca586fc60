"""Configuration: one settings model, read from defaults, a TOML file and QRAG_* variables."""
