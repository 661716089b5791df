"""Facts shared by the static linter and the runtime guard (no third-party imports)."""
