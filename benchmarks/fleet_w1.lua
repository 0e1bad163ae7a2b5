-- W1 for wrk: the one POST a 2026-07-28 client sends for `call_tool("echo", {"text": "hello"})`.
--
-- The fleet leg of benchmarks/production.py drives nginx with wrk and this script, so that the
-- load costs a small part of what a call costs the workers (the official Python client costs
-- more CPU per call than our server: two cores cannot show workers scaling under it). Headers
-- and body are what the official `mcp` client sends on 2026-07-28 (the routing headers our
-- server checks against the body, the protocol version and capabilities in `_meta`).
--
-- Every response is checked: a 200 carrying the echo as a successful result, or it counts as
-- failed (the first one kept as a sample). `done` prints one JSON line: requests, failures,
-- wrk's socket errors, the duration and the latency percentiles, in microseconds.

wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",'
    .. '"arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},'
    .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    failed = 0
    sample = ""
end

function response(status, headers, body)
    if status ~= 200
        or not body:find('"result":{', 1, true)
        or not body:find('"isError":false', 1, true)
        or not body:find('"text":"hello"', 1, true) then
        failed = failed + 1
        if sample == "" then
            sample = status .. " " .. body:sub(1, 300)
        end
    end
end

local function quoted(text)
    return '"' .. text:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
end

function done(summary, latency, requests)
    local failures, first = 0, ""
    for _, thread in ipairs(threads) do
        failures = failures + thread:get("failed")
        if first == "" then
            first = thread:get("sample")
        end
    end
    local e = summary.errors
    io.write(string.format(
        '{"requests": %d, "duration_us": %d, "failures": %d, "sample": %s, '
            .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
            .. '"latency_us": {"mean": %.1f, "p50": %d, "p90": %d, "p99": %d, "max": %d}}\n',
        summary.requests, summary.duration, failures, quoted(first),
        e.connect, e.read, e.write, e.status, e.timeout,
        latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max
    ))
end
