-- dpop.lua: GET requests with a DPoP-bound token and a fresh DPoP proof
-- each (RFC 9449), from a file bench/provider -dpop-url writes: lines
-- "PATH TOKEN PROOF", sent as "Authorization: DPoP TOKEN" and
-- "DPoP: PROOF". A proof is accepted once, so the requests are sent in
-- the file's order from BASE (0-based; one thread), never wrapping: a
-- run must send fewer requests than the file has lines after BASE (a
-- replayed proof is a 401, which bench/instr.sh reports).
--
--   wrk -t1 -c4 -d10s -s bench/lua/dpop.lua http://127.0.0.1:4180 -- dpop.txt [BASE]
local reqs = {}
local n = 0
local i = 0

function init(args)
  local f = assert(io.open(args[1], "r"))
  for line in f:lines() do
    local path, token, proof = line:match("^(%S+)%s+(%S+)%s+(%S+)$")
    if path then
      n = n + 1
      reqs[n] = wrk.format("GET", path, {["Authorization"] = "DPoP " .. token, ["DPoP"] = proof})
    end
  end
  f:close()
  assert(n > 0, "no requests in " .. args[1])
  i = tonumber(args[2]) or 0
end

function request()
  i = i + 1
  if i > n then
    i = 1 -- replays from here on: answered 401
  end
  return reqs[i]
end
