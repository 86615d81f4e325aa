"""The MCP front end (``reverie mcp``): the only package that imports the MCP SDK."""
