-- rotate.lua: GET requests rotating over a list prepared by bench/run.
-- Each line of the file (the script's first argument) is "PATH" or
-- "PATH TOKEN"; a token is sent as "Authorization: Bearer TOKEN". Requests
-- are formatted once at start (40,000 tokens: about 45 MB per thread), so
-- the generator's cost per request stays minimal.
--
-- Optional arguments: THREADS (wrk's -t) and BASE (0-based). Thread k of
-- THREADS then starts at BASE + (k-1)*N/THREADS (mod N) and cycles, so
-- that the threads never send the same request close together, and the
-- harness can start every run where the previous one left off (bench/run
-- passes BASE for the "distinct tokens" cases). Without them, each thread
-- starts at an arbitrary offset.
--
--   wrk -t2 -c32 -d10s -s bench/lua/rotate.lua http://127.0.0.1:4180 -- requests.txt [THREADS BASE]
local reqs = {}
local n = 0
local i = 0
local threads = 0

-- setup runs in wrk's main Lua state, once per thread before its init.
function setup(thread)
  threads = threads + 1
  thread:set("thread_index", threads)
end

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
  local nthreads = tonumber(args[2])
  local base = tonumber(args[3]) or 0
  if nthreads and nthreads > 0 and thread_index then
    i = (base + math.floor((thread_index - 1) * n / nthreads)) % n
  else
    i = (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % n
  end
end

function request()
  i = i % n + 1
  return reqs[i]
end
