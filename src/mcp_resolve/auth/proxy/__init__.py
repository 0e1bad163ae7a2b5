"""OAuthProxy: sign in with the identity provider you already have."""
