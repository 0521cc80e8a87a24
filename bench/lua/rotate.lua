-- rotate.lua: GET requests rotating over a list prepared by bench/run.
-- Each line of the file (the script's argument) is "PATH" or "PATH TOKEN";
-- a token is sent as "Authorization: Bearer TOKEN". Requests are formatted
-- once at start, so the generator's cost per request stays minimal.
--
--   wrk -t2 -c32 -d10s -s bench/lua/rotate.lua http://127.0.0.1:4180 -- requests.txt
local reqs = {}
local n = 0
local i = 0

function init(args)
  local f = assert(io.open(args[1], "r"))
  for line in f:lines() do
    local path, token = line:match("^(%S+)%s*(%S*)$")
    if path then
      local h = {}
      if token ~= "" then
        h["Authorization"] = "Bearer " .. token
      end
      n = n + 1
      reqs[n] = wrk.format("GET", path, h)
    end
  end
  f:close()
  assert(n > 0, "no requests in " .. args[1])
  -- threads start at different offsets
  i = (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % n
end

function request()
  i = i % n + 1
  return reqs[i]
end
