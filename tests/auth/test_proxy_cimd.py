"""A client known by its metadata document (CIMD) signs in through an `OAuthProxy`, never registering.

The client's id is the URL of its document, served by `DocumentServer` on
loopback (a loopback issuer accepts loopback `http` documents; anywhere else
they must be https). The flow is scripted by hand, as a client would run it:
PKCE authorize with that id, the person approves on the consent page (which
names the client from its document) and signs in upstream, the code is
exchanged, a tool is called, the refresh token is rotated. A redirect URI the
document does not list is refused before anyone is asked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcp_resolve import Client
from proxy_helpers import READ, ConsentingBrowser, proxied_desk
from upstream_helpers import DocumentServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REDIRECT = "http://127.0.0.1:47824/callback"


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _claims(jwt: str) -> dict[str, Any]:
    """A JWT's payload, unverified (the server verified it when the tool was called)."""
    payload = jwt.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


async def _whoami(url: str, token: str) -> str:
    async with Client(url, auth=token) as client:
        result = await client.call_tool("whoami", {})
    return "".join(getattr(part, "text", "") for part in result.content)


async def test_a_client_known_by_its_document_signs_in_calls_and_refreshes() -> None:
    documents = DocumentServer()
    async with documents.serving(), proxied_desk("oidc") as (_upstream, proxy, url):
        client_id = documents.document("/cimd-client.json", client_name="Docs Desk", redirect_uris=[REDIRECT])
        async with httpx.AsyncClient(timeout=30) as http:
            metadata = (await http.get(f"{proxy.issuer}/.well-known/oauth-authorization-server")).json()
            assert metadata["client_id_metadata_document_supported"] is True

            verifier, challenge = _pkce()
            state = secrets.token_urlsafe(16)
            query = {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": state,
                "scope": READ,
                "resource": url,
            }
            authorize = f"{metadata['authorization_endpoint']}?{urlencode(query)}"

            # The consent page names the client as its document does.
            page = await http.get(authorize, follow_redirects=True)
            assert page.status_code == 200 and "Docs Desk" in page.text, page.text[:300]

            # A redirect URI the document does not list (loopback: any port, but this path): refused
            # at the proxy, never redirected to.
            stray = await http.get(authorize.replace("%2Fcallback", "%2Felsewhere"))
            assert stray.status_code == 400 and "location" not in stray.headers

            person = ConsentingBrowser(REDIRECT)
            back = parse_qs(urlsplit(await person.visit(authorize)).query)
            assert back["state"] == [state] and back["iss"] == [proxy.issuer]
            assert person.consent_pages == 1

            tokens = await http.post(
                metadata["token_endpoint"],
                data={
                    "grant_type": "authorization_code",
                    "code": back["code"][0],
                    "redirect_uri": REDIRECT,
                    "client_id": client_id,
                    "code_verifier": verifier,
                    "resource": url,
                },
            )
            assert tokens.status_code == 200, tokens.text
            first = tokens.json()
            assert first["scope"] == READ
            assert _claims(first["access_token"])["client_id"] == client_id
            assert (
                await _whoami(url, first["access_token"]) == "google:alice <alice@example.com> groups=staff"
            )

            refreshed = await http.post(
                metadata["token_endpoint"],
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": first["refresh_token"],
                    "client_id": client_id,
                },
            )
            assert refreshed.status_code == 200, refreshed.text
            second = refreshed.json()
            assert second["refresh_token"] != first["refresh_token"]
            assert (
                await _whoami(url, second["access_token"]) == "google:alice <alice@example.com> groups=staff"
            )

        # Known by its document only: nothing was registered at the proxy.
        assert await proxy.get_client(client_id) is None
        assert documents.hits["/cimd-client.json"] >= 1
        await proxy.aclose()
