#!/usr/bin/env bash
# The publisher API of NotificationHub, call by call, against the sample hub.yaml:
#
#     swift run hub serve --config hub.yaml &     # from the repository root
#     examples/publish.sh                          # HUB=http://host:port to aim elsewhere
#
# Publishes for user "alice" of notes.contoso.com with the development publisher key
# (examples/dev/publisher.key), then republishes, reads the history, deletes, and publishes through
# the Graph-compatible route. Start `swift run device-simulator --user alice --token-secret-file
# examples/dev/user-token.secret` in another terminal to watch a device receive each change.
# Needs curl, and openssl for the last step (it signs a development user token).
set -euo pipefail
cd "$(dirname "$0")/.."

HUB="${HUB:-http://127.0.0.1:8080}"
APP="notes.contoso.com"
USER_ID="alice"
KEY="$(cat examples/dev/publisher.key)"
NOTIFICATIONS="$HUB/v1/apps/$APP/users/$USER_ID/notifications"

step() { printf '\n== %s\n' "$*"; }
call() { curl -sS -w '\n-> HTTP %{http_code}\n' "$@"; }

step "publish (201 Created, with the stored notification and a Location)"
call -X POST "$NOTIFICATIONS" \
    -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d '{"appNotificationId":"meeting-42","priority":"high",
         "payload":{"visualContent":{"title":"Meeting at 10","body":"Room 4"},"rawContent":"{\"meeting\":42}"},
         "targetPolicy":{"platformTypes":["ios","android"]}}'

step "republish the same appNotificationId (200 OK: updated, devices see the new version)"
call -X POST "$NOTIFICATIONS" \
    -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d '{"appNotificationId":"meeting-42","payload":{"visualContent":{"title":"Meeting moved to 11","body":"Room 4"}}}'

step "a bad body (400: every field error listed in one problem+json)"
call -X POST "$NOTIFICATIONS" \
    -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d '{"appNotificationId":"","priority":"urgent","payload":{}}'

step "history: the user's unread notifications, newest first"
call "$NOTIFICATIONS?readState=unread&limit=20" -H "Authorization: Bearer $KEY"

step "one notification, by appNotificationId (or the hub's id)"
call "$NOTIFICATIONS/meeting-42" -H "Authorization: Bearer $KEY"

step "delete (204; devices see a deleted tombstone and remove the visual)"
call -X DELETE "$NOTIFICATIONS/meeting-42" -H "Authorization: Bearer $KEY"

step "history of deleted notifications"
call "$NOTIFICATIONS?status=deleted" -H "Authorization: Bearer $KEY"

# --- Graph compatibility -------------------------------------------------------------------------
# Graph's POST /beta/me/notifications named the user with X-UNS-ID, a subscription ID the device
# obtained. Here the device gets it from POST /v1/apps/{app}/me/subscription with its user token.
# The sample app accepts HS256 user tokens signed with examples/dev/user-token.secret; a real device
# would get its token from the identity provider.
base64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
SECRET="$(cat examples/dev/user-token.secret)"
NOW="$(date +%s)"
HEADER="$(printf '{"alg":"HS256","typ":"JWT"}' | base64url)"
CLAIMS="$(printf '{"aud":"contoso-notes","exp":%d,"iat":%d,"iss":"https://login.contoso.com","sub":"%s"}' \
    $((NOW + 600)) "$NOW" "$USER_ID" | base64url)"
SIGNATURE="$(printf '%s' "$HEADER.$CLAIMS" | openssl dgst -sha256 -hmac "$SECRET" -binary | base64url)"
USER_TOKEN="$HEADER.$CLAIMS.$SIGNATURE"

step "the device asks for the user's Graph subscription ID (X-UNS-ID)"
SUBSCRIPTION="$(curl -sS -X POST "$HUB/v1/apps/$APP/me/subscription" -H "Authorization: Bearer $USER_TOKEN")"
echo "$SUBSCRIPTION"
UNS_ID="$(printf '%s' "$SUBSCRIPTION" | sed -E 's/.*"id":"([^"]+)".*/\1/')"

step "publish as Graph did: same body and X-UNS-ID, new base URL and token (201)"
call -X POST "$HUB/beta/me/notifications" \
    -H "Authorization: Bearer $KEY" -H "X-UNS-ID: $UNS_ID" -H 'Content-Type: application/json' \
    -d '{"targetHostName":"notes.contoso.com","appNotificationId":"graph-1",
         "payload":{"visualContent":{"title":"Sent through the Graph route"}}}'
