"""The inference gateway: per model an InferencePool, its router and routes; the shared Gateway."""
