-- wrk script of the httpd suite (bench/httpd/bench.py): cycles through a
-- pre-drawn request list, one URL path per line, in its order.
--   wrk ... -s paths.lua http://127.0.0.1:PORT -- LIST [THREAD_STRIDE]
-- Each wrk thread has its own Lua state and counter; thread k starts at
-- line 1 + k * THREAD_STRIDE (default 0), so with -t1 the requests are
-- exactly the list, in order, cycling. The requests are formatted once in
-- init, so request() costs wrk as little as possible. done() prints one
-- key=value line (latencies in microseconds) for bench.py.

local reqs = {}
local n = 0
local i = 0
local threads = 0

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

function init(args)
  local f = assert(io.open(args[1], "r"))
  for line in f:lines() do
    n = n + 1
    reqs[n] = wrk.format("GET", line)
  end
  f:close()
  assert(n > 0, "empty request list")
  local stride = tonumber(args[2] or "0")
  i = ((id or 0) * stride) % n
end

function request()
  i = i + 1
  if i > n then i = 1 end
  return reqs[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "wrk requests=%d duration_us=%d bytes=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d\n",
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
