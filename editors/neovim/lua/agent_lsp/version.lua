-- The plugin's version: the repository's VERSION, which the server
-- (agent-lsp --version) and the VS Code extension share. cmd/agent-lsp's
-- TestVersion fails when they differ; :checkhealth agent_lsp shows it beside
-- the server's.
return "0.2.0"
