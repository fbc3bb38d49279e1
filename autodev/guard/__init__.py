"""What a participant may not do unseen: the command guard (gates, the shell parsers, what it
cannot see into), the sandbox, the one secret policy and the key store."""
