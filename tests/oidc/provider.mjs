// A real OpenID Connect provider for the sign-in tests, on a loopback port: oidc-provider with the
// signing keys, clients and accounts the test gives it in a JSON file (argv[2]).
//   accounts: login -> groups (any password signs in: oidc-provider's development login page)
//   robots: client_id -> {secret, groups}, for the client-credentials grant
// Access tokens are JWTs for `audience` and carry the groups claim. Prints {"issuer": ...} once listening.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import Provider from "oidc-provider";

const setup = JSON.parse(readFileSync(process.argv[2], "utf8"));
const server = createServer();
server.listen(setup.port || 0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const groupsOf = (token) =>
    token.accountId ? setup.accounts[token.accountId] || [] : (setup.robots[token.clientId] || {}).groups || [];
  const provider = new Provider(issuer, {
    jwks: { keys: setup.jwks },
    clients: [
      { client_id: "qrag-web", token_endpoint_auth_method: "none", redirect_uris: setup.redirect_uris,
        grant_types: ["authorization_code"], response_types: ["code"] },
      ...Object.entries(setup.robots).map(([id, robot]) => ({
        client_id: id, client_secret: robot.secret, grant_types: ["client_credentials"],
        redirect_uris: [], response_types: [] })),
    ],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => setup.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: "api", audience: setup.audience, accessTokenFormat: "jwt",
          accessTokenTTL: 600, jwt: { sign: { alg: "RS256" } } }),
      },
    },
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    extraTokenClaims: (ctx, token) => ({ groups: groupsOf(token) }),
    scopes: ["openid", "api"],
    clientBasedCORS: (ctx, origin, client) => client.redirectUris.some((uri) => new URL(uri).origin === origin),
    loadExistingGrant: async (ctx) => {  // no consent screen: the test's own client
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope("openid");
      grant.addResourceScope(setup.audience, "api");
      await grant.save();
      return grant;
    },
  });
  server.on("request", provider.callback());
  process.stdout.write(JSON.stringify({ issuer }) + "\n");
});
