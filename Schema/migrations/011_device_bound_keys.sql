-- Device-bound ingest keys: an ingest key created with a token secret accepts events only
-- with a device token signed by that secret (HS256), and only for the user (and device) the
-- token names. The secret is stored as created: verifying an HMAC needs it. NULL: the key is
-- not bound.
ALTER TABLE api_keys ADD COLUMN token_secret text;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_token_secret_ingest CHECK (token_secret IS NULL OR scope = 'ingest');
