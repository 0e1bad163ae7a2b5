"""The MCP authorization flow, client side, as an `httpx.Auth`: `OAuth` (a person logs in) and `ClientCredentials`.

Both sit on the client's HTTP connection and act on what the server answers:
a 401 refreshes or obtains a token, a 403 `insufficient_scope` asks for a
wider one (step-up); either way the request is retried with it.

The pieces of OAuth itself come from Authlib (PKCE S256, authorization and
token request encoding, client authentication including `private_key_jwt`
signed with joserfc, metadata validation, token expiry); this package only
decides what to ask for and checks what comes back: the `state`, the `iss`
of the authorization response (RFC 9207, compared as plain strings), the
resource in the metadata, the size and shape of every response.

All traffic to authorization servers goes through a client of its own,
never the MCP connection's, so headers meant for the MCP server (an API key,
say) never reach an authorization server.

The parts, each in its module:

* `grant`: `Grant`, what both share: signing, the token records, the
  reaction to 401 and 403, refresh;
* `authorization_code`: `OAuth`, the browser login with PKCE;
* `client_credentials`: `ClientCredentials`, a secret or a signed assertion;
* `registration`: the client identity, and dynamic client registration;
* `token_endpoint`: asking for tokens and checking the answer;
* `discovery` and `challenge`: finding the authorization server.
"""

from __future__ import annotations

from .authorization_code import OAuth
from .client_credentials import ClientCredentials

__all__ = ["ClientCredentials", "OAuth"]
