// What the local auth server does not serve, answered as a GoTrue project with those features turned off
// answers (a hosted project can be configured so): phone and WebAuthn factors (mfa.ts), passkeys, SAML SSO, manual identity
// linking and the OAuth server are "disabled"; a factor or a PKCE flow state is "not found"; Web3 and
// ID-token grants name their disabled provider. So an app meets the same errors, in the same shape, as
// against such a project, never a page it cannot read.
import type { Context, Hono } from 'hono'
import { GoTrueError } from './errors.ts'
import type { AuthKit } from './kit.ts'

const off = (status: number, code: string, message: string) => () => {
  throw new GoTrueError(status, code, message)
}

export function disabledFeatures(app: Hono, kit: AuthKit): void {
  const signedIn = async (c: Context, next: () => Promise<void>) => {
    await kit.requireUser(c)
    await next()
  }
  const admin = async (c: Context, next: () => Promise<void>) => {
    await kit.requireServiceRole(c)
    await next()
  }
  // a factor path the MFA routes do not serve (phone, WebAuthn) names no factor
  app.all('/factors/*', signedIn, off(404, 'mfa_factor_not_found', 'Factor not found'))
  app.all('/admin/users/:id/factors/*', admin, off(404, 'mfa_factor_not_found', 'Factor not found'))
  app.all('/passkeys', off(404, 'passkey_disabled', 'Passkeys are disabled'))
  app.all('/passkeys/*', off(404, 'passkey_disabled', 'Passkeys are disabled'))
  app.all('/admin/users/:id/passkeys', admin, off(404, 'passkey_disabled', 'Passkeys are disabled'))
  app.all('/admin/users/:id/passkeys/*', admin, off(404, 'passkey_disabled', 'Passkeys are disabled'))
  for (const path of ['/sso', '/sso/*', '/admin/sso', '/admin/sso/*']) app.all(path, off(404, 'saml_provider_disabled', 'SAML 2.0 is disabled'))
  app.all('/user/identities', signedIn, off(404, 'manual_linking_disabled', 'Manual linking is disabled'))
  app.all('/user/identities/*', signedIn, off(404, 'manual_linking_disabled', 'Manual linking is disabled'))
  for (const path of ['/admin/oauth', '/admin/oauth/*', '/oauth', '/oauth/*', '/.well-known/oauth-authorization-server']) {
    app.all(path, off(404, 'feature_disabled', 'OAuth server is disabled'))
  }
}

/** The answer to a token grant this server does not serve, as GoTrue gives it when the provider is off. */
export function unservedGrant(grant: string | undefined, body: Record<string, unknown>): GoTrueError {
  if (grant === 'web3') return new GoTrueError(422, 'web3_provider_disabled', 'Web3 provider is disabled')
  if (grant === 'id_token') return new GoTrueError(400, 'provider_disabled', `Provider (issuer "${String(body.provider ?? '')}") is not enabled`)
  if (grant === 'pkce') return new GoTrueError(404, 'flow_state_not_found', 'invalid flow state, no valid flow state found')
  return new GoTrueError(400, 'invalid_credentials', 'unsupported_grant_type')
}
