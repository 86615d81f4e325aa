-- Headless Neovim (0.7+) as a real LSP client of `python -m reverie serve`.
-- Reads REVERIE_NVIM_PYTHON and REVERIE_NVIM_WORKSPACE; writes one "<TAG> <json>" line per
-- observation to stdout and exits 0 only if every step worked. Always exits (pcall + os.exit),
-- because an uncaught error would leave headless nvim running.
local out = function(tag, value)
  io.stdout:write(tag .. " " .. vim.fn.json_encode(value) .. "\n")
end

local function main()
  local python = assert(os.getenv("REVERIE_NVIM_PYTHON"), "REVERIE_NVIM_PYTHON not set")
  local workspace = assert(os.getenv("REVERIE_NVIM_WORKSPACE"), "REVERIE_NVIM_WORKSPACE not set")
  local saved, events, shown = {}, {}, {}
  local id = vim.lsp.start_client({
    name = "reverie",
    cmd = { python, "-m", "reverie", "serve" },
    root_dir = workspace,
    workspace_folders = { { uri = vim.uri_from_fname(workspace), name = "workspace" } },
    handlers = {
      ["reverie/memorySaved"] = function(_, result) table.insert(saved, result) end,
      ["reverie/jobEvent"] = function(_, result) table.insert(events, result) end,
      ["window/showMessage"] = function(_, result) table.insert(shown, result) end,
    },
  })
  assert(id, "vim.lsp.start_client returned nil")
  local client = vim.lsp.get_client_by_id(id)
  vim.lsp.buf_attach_client(0, id)
  assert(vim.wait(20000, function() return client.initialized == true or client.is_stopped() end, 20),
    "the server did not initialize in 20 s")
  assert(not client.is_stopped(), "the server exited during initialize")
  out("INITIALIZED", { name = client.name, commands = (client.server_capabilities.executeCommandProvider or {}).commands })

  local function execute(command, args)
    local resp, err = client.request_sync("workspace/executeCommand",
      { command = command, arguments = { args } }, 20000, 0)
    assert(resp, command .. ": " .. tostring(err))
    assert(not resp.err, command .. ": " .. vim.inspect(resp.err))
    return resp.result
  end

  local status = execute("reverie.server.status", { workspace = workspace })
  out("STATUS", status)
  local started = execute("reverie.server.dream", { workspace = workspace, extraContext = "from the Neovim test" })
  out("DREAM", started)
  local got = vim.wait(90000, function() return #saved > 0 or client.is_stopped() end, 50)
  for _, event in ipairs(events) do out("JOB_EVENT", event) end
  for _, message in ipairs(shown) do out("SHOW_MESSAGE", message) end
  assert(got and #saved > 0, "no reverie/memorySaved within 90 s")
  out("MEMORY_SAVED", saved[1])
  -- the same camelCase contract as the VS Code client: history, then undo of the last dream
  local history = execute("reverie.server.history", { workspace = workspace })
  out("HISTORY", history)
  local undone = execute("reverie.server.undo", { workspace = workspace })
  out("UNDO", undone)
  -- and the redo (an undo of that undo) brings the dream's files back
  local redone = execute("reverie.server.undo", { workspace = workspace, redo = true })
  out("REDO", redone)

  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 20)
  return true
end

local ok, err = pcall(main)
if not ok then
  io.stderr:write("ERROR: " .. tostring(err) .. "\n")
end
io.stdout:write(ok and "RESULT pass\n" or "RESULT fail\n")
os.exit(ok and 0 or 1)
