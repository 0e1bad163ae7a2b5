"""Sign in with an upstream identity provider (GitHub, Google, Entra ID, any OpenID provider): the OAuth proxy."""
