-- create.lua: POST /shorten with a JSON body (each answer is a new link).
--
--   wrk -t2 -c32 -d10s -s bench/lua/create.lua http://127.0.0.1:8000/shorten
wrk.method = "POST"
wrk.body = '{"url":"https://example.com/articles/42?utm_source=bench&x=1"}'
wrk.headers["Content-Type"] = "application/json"
