"""Who is calling: team keys, sign-in tokens, and the guard that checks them before a body is read."""
