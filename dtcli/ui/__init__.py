"""Terminal and JSON renderers (rich); the CLI is their only caller."""
