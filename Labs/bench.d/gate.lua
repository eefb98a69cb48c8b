-- wrk: GET one feature's gate for a random device among the simulated population.
-- Env: LOCGATE_KEY, LOCGATE_DEVICES.
-- The request is wrk.format's, made once with placeholders and cut around them: each request
-- is then one concatenation of its ids into it, not a wrk.format (a table of headers walked
-- and joined) per request, so that wrk's own Lua takes less of the two cores the server needs.
local key = os.getenv("LOCGATE_KEY")
local devices = tonumber(os.getenv("LOCGATE_DEVICES") or "1000")
math.randomseed(os.time())
local head, middle, tail
local floor, random = math.floor, math.random
-- In init: wrk sets the Host header before it calls init.
init = function(args)
    local template = wrk.format("GET", "/v1/users/user-{U}/devices/device-{D}/gates/nearby", { ["Authorization"] = "Bearer " .. key })
    local user_at = string.find(template, "{U}", 1, true)
    local device_at = string.find(template, "{D}", 1, true)
    head = string.sub(template, 1, user_at - 1)
    middle = string.sub(template, user_at + 3, device_at - 1)
    tail = string.sub(template, device_at + 3)
end
request = function()
    local i = random(0, devices - 1)
    return head .. floor(i / 2) .. middle .. i .. tail
end
dofile("Labs/bench.d/report.lua")
