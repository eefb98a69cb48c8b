-- wrk: one event per request (a new device reporting that the app came to the foreground),
-- each with a fresh id. Env: LOCGATE_KEY; LOCGATE_RUN (optional) prefixes the user ids, so that
-- a warm-up's devices are not the measured run's. Each wrk run's devices are its own (a nonce
-- read once per run), so that the turns of one measure (`wrk_alternating`) are new devices too.
local key = os.getenv("LOCGATE_KEY")
local run = os.getenv("LOCGATE_RUN") or "bench"
local counter = 0
local thread_id = 0
-- Six hex digits: a user id of up to 15 bytes stays a string without a heap allocation.
local run_nonce = nil
setup = function(thread)
    if not run_nonce then
        local random = io.open("/dev/urandom", "rb")
        local bytes = random:read(3)
        random:close()
        run_nonce = string.gsub(bytes, ".", function(c) return string.format("%02x", string.byte(c)) end)
    end
    thread_id = thread_id + 1
    thread:set("tid", thread_id)
    thread:set("nonce", run_nonce)
end
local function uuid()
    local template = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"
    return (string.gsub(template, "[xy]", function(c)
        local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
        return string.format("%x", v)
    end))
end
init = function(args)
    math.randomseed(os.time() * 1000 + (tid or 0))
end
request = function()
    counter = counter + 1
    local body = '{"events": [{"id": "' .. uuid() .. '", "userId": "' .. run .. '-' .. (nonce or "0") .. '-' .. (tid or 0) .. '", "deviceId": "d-' .. counter ..
        '", "occurredAt": "2026-11-22T10:00:00Z", "type": "appStateChanged", "data": {"state": "foreground"}}]}'
    return wrk.format("POST", "/v1/events", { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }, body)
end
dofile("Labs/bench.d/report.lua")
