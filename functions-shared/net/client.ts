// Who a client is, for the limits kept per client (open connections, the per-IP rate limits): an IPv4
// address (an IPv4-mapped IPv6 one as that address), an IPv6 address's /64 (one host is given a whole
// /64, and picks any address in it for each request), and loopback as one client, since any local process
// may send from every address of 127.0.0.0/8.

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/
const IPV6 = /^[0-9a-f:.]+$/i

/** The client an address belongs to; an address that is neither IPv4 nor IPv6 is its own client. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown'
  const v4 = /^::ffff:/i.test(address) && IPV4.test(address.slice(7)) ? address.slice(7) : address
  if (IPV4.test(v4)) return v4.startsWith('127.') ? 'loopback' : v4
  const bare = address.split('%')[0]!.toLowerCase()
  if (!bare.includes(':') || !IPV6.test(bare)) return address
  const [head = '', tail] = bare.split('::')
  const groups = head ? head.split(':') : []
  const after = tail === undefined ? [] : tail ? tail.split(':') : []
  const full = [...groups, ...Array<string>(Math.max(0, 8 - groups.length - after.length)).fill('0'), ...after].map((g) => g.replace(/^0+(?=.)/, ''))
  if (full.join(':') === '0:0:0:0:0:0:0:1') return 'loopback'
  return `${full.slice(0, 4).join(':')}::/64`
}
