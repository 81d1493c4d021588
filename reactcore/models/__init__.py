"""Chat models: the protocol the LLM node talks to, and the clients that implement it."""
