-- wrk: OFREP's bulk evaluation (POST /ofrep/v1/evaluate/flags) for a random device among the
-- first LOCGATE_DEVICES of the simulated population (`user-I/2`, `device-I`, as `locgate
-- simulate` names them), every feature and every experiment of the key's app.
-- Env: LOCGATE_KEY (or the variable a script that loads this one names in `key_variable`),
-- LOCGATE_DEVICES.
-- As gate.lua, the request's head is wrk.format's, made once: each request is its head, its
-- Content-Length and its body joined, not a wrk.format per request.
local key = os.getenv(key_variable or "LOCGATE_KEY")
local devices = tonumber(os.getenv("LOCGATE_DEVICES") or "1000")
math.randomseed(os.time())
local head
local floor, random = math.floor, math.random
-- In init: wrk sets the Host header before it calls init.
init = function(args)
    -- Without a body wrk.format writes no Content-Length and ends with an empty line: the head
    -- is that without its last CRLF, so that each request's Content-Length goes after it.
    local template = wrk.format("POST", "/ofrep/v1/evaluate/flags",
        { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" })
    head = string.sub(template, 1, -3)
end
request = function()
    local i = random(0, devices - 1)
    local body = '{"context":{"targetingKey":"user-' .. floor(i / 2) .. '","deviceId":"device-' .. i .. '"}}'
    return head .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
end
dofile("Labs/bench.d/report.lua")
