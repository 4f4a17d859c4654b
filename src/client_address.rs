//! Who is asking: the client's IP address, for sign-in limits and the audit log. The peer
//! of the TCP connection is the client, unless it is one of `BURNRATE_TRUSTED_PROXIES`;
//! then the one header those proxies append (`BURNRATE_FORWARDED_HEADER`: `X-Forwarded-For`,
//! or `Forwarded` per RFC 7239) is read from the right, skipping the
//! trusted hops, and the first untrusted hop is the client. A client can write anything
//! into those headers, so only hops a trusted proxy appended are believed.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;

/// One CIDR block: an address and how many leading bits must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    bits: u8,
}

impl Cidr {
    /// `10.0.0.0/8`, `fd00::/8`, or one address (`192.0.2.7`).
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let text = text.trim();
        let (address, bits) = match text.split_once('/') {
            Some((address, bits)) => (address, Some(bits)),
            None => (text, None),
        };
        let network: IpAddr = address
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or CIDR block"))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(bits) => bits
                .parse::<u8>()
                .ok()
                .filter(|b| *b <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(Cidr { network, bits })
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        let (network, address, width) = match (self.network, canonical(address)) {
            (IpAddr::V4(n), IpAddr::V4(a)) => (u32::from(n) as u128, u32::from(a) as u128, 32),
            (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
            _ => return false,
        };
        let shift = width - u32::from(self.bits);
        shift >= width || (network >> shift) == (address >> shift)
    }
}

/// An IPv4 client seen through an IPv6 socket (`::ffff:192.0.2.7`) is the IPv4 address.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// Which header the trusted proxies append to (`BURNRATE_FORWARDED_HEADER`). Only that one
/// is read: a proxy passes the other through as the client wrote it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForwardedHeader {
    #[default]
    XForwardedFor,
    Forwarded,
}

impl ForwardedHeader {
    pub fn parse(text: &str) -> Option<ForwardedHeader> {
        match text.trim().to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Some(ForwardedHeader::XForwardedFor),
            "forwarded" => Some(ForwardedHeader::Forwarded),
            _ => None,
        }
    }
}

/// `BURNRATE_TRUSTED_PROXIES`: comma-separated CIDR blocks (empty trusts no proxy), and the
/// header they append to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Cidr>, ForwardedHeader);

impl TrustedProxies {
    pub fn parse(text: &str) -> Result<TrustedProxies, String> {
        text.split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(Cidr::parse)
            .collect::<Result<Vec<_>, _>>()
            .map(|blocks| TrustedProxies(blocks, ForwardedHeader::default()))
    }

    pub fn reading(self, header: ForwardedHeader) -> TrustedProxies {
        TrustedProxies(self.0, header)
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|cidr| cidr.contains(address))
    }

    /// The client of a request that reached us from `peer` with these headers.
    pub fn client(&self, peer: IpAddr, headers: &http::HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        // Hops from the client to the last proxy; the last is the one nearest to us.
        let hops = forwarded_hops(headers, self.1);
        let mut client = peer;
        for hop in hops.iter().rev() {
            match hop {
                Some(address) if self.trusts(*address) => client = *address,
                Some(address) => return *address,
                // A hop a trusted proxy could not name (`unknown`, obfuscated): the last
                // address we can vouch for is the nearest we know.
                None => return client,
            }
        }
        client
    }
}

/// The hops of the chosen header (every `for=` of `Forwarded`, or every `X-Forwarded-For`
/// entry), in order; `None` for a hop that is not an address.
fn forwarded_hops(headers: &http::HeaderMap, header: ForwardedHeader) -> Vec<Option<IpAddr>> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    };
    if header == ForwardedHeader::Forwarded {
        return values("forwarded")
            .iter()
            .flat_map(|value| value.split(','))
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.trim().split_once('='))
                    .find(|(key, _)| key.eq_ignore_ascii_case("for"))
                    .and_then(|(_, value)| hop_address(value.trim().trim_matches('"')))
            })
            .collect();
    }
    values("x-forwarded-for")
        .iter()
        .flat_map(|value| value.split(','))
        .map(|hop| hop_address(hop.trim()))
        .collect()
}

/// `192.0.2.7`, `192.0.2.7:4711`, `2001:db8::1`, `[2001:db8::1]:4711`.
fn hop_address(text: &str) -> Option<IpAddr> {
    if let Ok(address) = text.parse::<IpAddr>() {
        return Some(canonical(address));
    }
    if let Ok(socket) = text.parse::<SocketAddr>() {
        return Some(canonical(socket.ip()));
    }
    text.strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(inside, _)| inside.parse().ok())
        .map(canonical)
}

/// The request's client address as text (`unknown` only when the server was not given
/// the peer, which `serve` always is).
pub fn client_ip(parts: &http::request::Parts, trusted: &TrustedProxies) -> String {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| trusted.client(peer.ip(), &parts.headers).to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().expect("header"));
        }
        map
    }

    #[test]
    fn cidr_blocks_parse_and_match() {
        let private = Cidr::parse("10.0.0.0/8").expect("cidr");
        assert!(private.contains(ip("10.200.1.2")));
        assert!(!private.contains(ip("11.0.0.1")));
        assert!(Cidr::parse("192.0.2.7").expect("one").contains(ip("::ffff:192.0.2.7")));
        assert!(Cidr::parse("fd00::/8").expect("v6").contains(ip("fd12::1")));
        assert!(Cidr::parse("0.0.0.0/0").expect("all").contains(ip("203.0.113.9")));
        for bad in ["10.0.0.0/33", "nonsense", "10.0.0/8", "::/129", "10.0.0.0/x"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(TrustedProxies::parse(" "), Ok(TrustedProxies::default()));
        assert!(TrustedProxies::parse("10.0.0.0/8, bogus").is_err());
    }

    #[test]
    fn headers_count_only_behind_a_trusted_proxy_and_from_the_right() {
        let none = TrustedProxies::default();
        let spoofed = headers(&[("x-forwarded-for", "198.51.100.1")]);
        assert_eq!(none.client(ip("127.0.0.1"), &spoofed), ip("127.0.0.1"));

        let proxy = TrustedProxies::parse("127.0.0.1/32, 10.0.0.0/8").expect("trusted");
        // The client wrote the first hop itself; the proxy appended the real one.
        let chain = headers(&[("x-forwarded-for", "198.51.100.1, 203.0.113.5")]);
        assert_eq!(proxy.client(ip("127.0.0.1"), &chain), ip("203.0.113.5"));
        // Two trusted proxies: skip both.
        let two = headers(&[("x-forwarded-for", "203.0.113.5, 10.1.2.3")]);
        assert_eq!(proxy.client(ip("127.0.0.1"), &two), ip("203.0.113.5"));
        // An untrusted peer's headers are ignored.
        assert_eq!(proxy.client(ip("192.0.2.50"), &chain), ip("192.0.2.50"));
        // Only the configured header counts: a client's own `Forwarded` is ignored behind a
        // proxy that appends X-Forwarded-For, and the other way round.
        let both = headers(&[
            ("forwarded", "for=198.51.100.1;proto=https, for=\"[2001:db8::7]:4711\""),
            ("x-forwarded-for", "192.0.2.99"),
        ]);
        assert_eq!(proxy.client(ip("127.0.0.1"), &both), ip("192.0.2.99"));
        let rfc = proxy.clone().reading(ForwardedHeader::Forwarded);
        assert_eq!(rfc.client(ip("127.0.0.1"), &both), ip("2001:db8::7"));
        assert_eq!(ForwardedHeader::parse("Forwarded"), Some(ForwardedHeader::Forwarded));
        assert_eq!(ForwardedHeader::parse("x-real-ip"), None);
        // A hop that is not an address stops the walk at the nearest known one.
        let unknown = headers(&[("x-forwarded-for", "203.0.113.5, unknown, 10.9.9.9")]);
        assert_eq!(proxy.client(ip("127.0.0.1"), &unknown), ip("10.9.9.9"));
        // Behind a trusted proxy with no header: the proxy itself.
        assert_eq!(proxy.client(ip("127.0.0.1"), &headers(&[])), ip("127.0.0.1"));
    }
}
