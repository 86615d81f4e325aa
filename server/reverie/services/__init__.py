"""The use cases both front ends (CLI, language server) call: they parse input and present
results; what is done lives here."""
