// What the local auth server does not serve, answered as a GoTrue project with those features turned off
// answers (a hosted project can be configured so): MFA enrollment, passkeys, SAML SSO, manual identity
// linking and the OAuth server are "disabled"; a factor or a PKCE flow state is "not found"; Web3 and
// ID-token grants name their disabled provider. So an app meets the same errors, in the same shape, as
// against such a project, never a page it cannot read.
import type { Context, Hono } from 'hono'
import { GoTrueError } from './errors.ts'
import { readBody, type AuthKit } from './kit.ts'
import { findUser } from './users.ts'

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
  // MFA: enrollment is off for every factor type; there are no factors to challenge, verify or remove
  app.post('/factors', signedIn, async (c) => {
    const type = String((await readBody(c)).factor_type ?? 'totp')
    const kind = type === 'webauthn' ? ['mfa_webauthn_enroll_not_enabled', 'WebAuthn'] : type === 'phone' ? ['mfa_phone_enroll_not_enabled', 'Phone'] : ['mfa_totp_enroll_not_enabled', 'TOTP']
    throw new GoTrueError(422, kind[0]!, `MFA enroll is disabled for ${kind[1]}`)
  })
  app.all('/factors/*', signedIn, off(404, 'mfa_factor_not_found', 'Factor not found'))
  app.get('/admin/users/:id/factors', admin, async (c) => {
    // an unknown user is GoTrue's 404; a known one has no factors
    if (!(await findUser(kit.sql, c.req.param('id') ?? ''))) throw new GoTrueError(404, 'user_not_found', 'User not found')
    return c.json([])
  })
  app.all('/admin/users/:id/factors/*', admin, off(404, 'mfa_factor_not_found', 'Factor not found'))
  app.all('/passkeys', off(404, 'passkey_disabled', 'Passkeys are disabled'))
  app.all('/passkeys/*', off(404, 'passkey_disabled', 'Passkeys are disabled'))
  app.all('/admin/users/:id/passkeys', admin, off(404, 'passkey_disabled', 'Passkeys are disabled'))
  app.all('/admin/users/:id/passkeys/*', admin, off(404, 'passkey_disabled', 'Passkeys are disabled'))
  for (const path of ['/sso', '/sso/*', '/admin/sso', '/admin/sso/*']) app.all(path, off(404, 'saml_provider_disabled', 'SAML 2.0 is disabled'))
  app.all('/user/identities', signedIn, off(404, 'manual_linking_disabled', 'Manual linking is disabled'))
  app.all('/user/identities/*', signedIn, off(404, 'manual_linking_disabled', 'Manual linking is disabled'))
  for (const path of ['/admin/oauth', '/admin/oauth/*', '/oauth', '/oauth/*', '/.well-known/oauth-authorization-server']) app.all(path, off(404, 'feature_disabled', 'OAuth server is disabled'))
}

/** The answer to a token grant this server does not serve, as GoTrue gives it when the provider is off. */
export function unservedGrant(grant: string | undefined, body: Record<string, unknown>): GoTrueError {
  if (grant === 'web3') return new GoTrueError(422, 'web3_provider_disabled', 'Web3 provider is disabled')
  if (grant === 'id_token') return new GoTrueError(400, 'provider_disabled', `Provider (issuer "${String(body.provider ?? '')}") is not enabled`)
  if (grant === 'pkce') return new GoTrueError(404, 'flow_state_not_found', 'invalid flow state, no valid flow state found')
  return new GoTrueError(400, 'invalid_credentials', 'unsupported_grant_type')
}
