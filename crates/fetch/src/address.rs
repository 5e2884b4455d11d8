//! Which addresses and URLs an outbound request may reach (F26). Pure: no I/O.
//!
//! [`classify`] sorts any IP address into an [`AddressClass`]; [`AddressPolicy`] decides from
//! that class, the operator's settings and the URL's shape whether a request may go ahead, and
//! says why not with a [`Refusal`]. The guarded client applies it to IP-literal hosts before a
//! request, to every address its resolver returns (so the address checked is the address
//! connected to), to every redirect hop and to the peer address of every response.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use url::{Host, Url};

/// What kind of address an IP is, as far as reaching it from a server is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// A globally routable unicast address: the only class allowed without settings.
    Public,
    /// `0.0.0.0` or `::`, which Linux routes to the local host. Never allowed.
    Unspecified,
    /// `0.0.0.0/8` other than `0.0.0.0` ("this network"). Never allowed.
    ThisNetwork,
    /// `127.0.0.0/8` and `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64.0.0/10`, carrier-grade NAT (RFC 6598).
    SharedAddressSpace,
    /// `169.254/16` and `fe80::/10`.
    LinkLocal,
    /// A cloud instance-metadata endpoint such as `169.254.169.254`. Never allowed.
    CloudMetadata,
    /// `192.0.0.0/24` and `2001::/23` outside the ranges named elsewhere (RFC 6890).
    IetfProtocol,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `198.18.0.0/15` and `2001:2::/48` (RFC 2544, RFC 5180).
    Benchmarking,
    /// `224.0.0.0/4` and `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Everything else that is not global unicast: `240/4`, `192.88.99/24`, IPv6 outside
    /// `2000::/3`, IPv4-compatible `::/96`, Teredo and the discard prefix `100::/64`.
    Reserved,
    /// `fc00::/7` (RFC 4193), the IPv6 counterpart of RFC 1918.
    UniqueLocal,
    /// `fec0::/10`, deprecated site-local IPv6.
    SiteLocal,
}

impl AddressClass {
    /// The class as it reads after "is": "a private address".
    pub fn describe(self) -> &'static str {
        match self {
            AddressClass::Public => "a public address",
            AddressClass::Unspecified => "an unspecified address",
            AddressClass::ThisNetwork => "a \"this network\" address",
            AddressClass::Loopback => "a loopback address",
            AddressClass::Private => "a private address",
            AddressClass::SharedAddressSpace => "a carrier-grade NAT address",
            AddressClass::LinkLocal => "a link-local address",
            AddressClass::CloudMetadata => "a cloud metadata address",
            AddressClass::IetfProtocol => "an IETF protocol address",
            AddressClass::Documentation => "a documentation address",
            AddressClass::Benchmarking => "a benchmarking address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "a broadcast address",
            AddressClass::Reserved => "a reserved address",
            AddressClass::UniqueLocal => "a unique local address",
            AddressClass::SiteLocal => "a site-local address",
        }
    }

    /// Whether `allow_private_networks` lets requests reach this class: the ranges a LAN, a
    /// VPN or a test server lives on. Link-local stays refused because it is where metadata
    /// services live and no feed server does.
    pub fn is_lifted_by_private_networks(self) -> bool {
        matches!(
            self,
            AddressClass::Loopback
                | AddressClass::Private
                | AddressClass::SharedAddressSpace
                | AddressClass::UniqueLocal
                | AddressClass::SiteLocal
        )
    }

    /// Whether no setting can allow this class: connecting to it reaches the local host or a
    /// credentials service whatever the operator meant.
    pub fn is_never_allowed(self) -> bool {
        matches!(
            self,
            AddressClass::Unspecified | AddressClass::ThisNetwork | AddressClass::CloudMetadata
        )
    }
}

/// Classifies an address. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is judged as its IPv4 address,
/// and tunnelling forms that embed an IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo) take
/// the class of the embedded address when that one is not public.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, d] = ip.octets();
    match (a, b, c, d) {
        (0, 0, 0, 0) => AddressClass::Unspecified,
        (0, ..) => AddressClass::ThisNetwork,
        (10, ..) => AddressClass::Private,
        // Alibaba Cloud's metadata service lives inside the CGNAT range.
        (100, 100, 100, 200) => AddressClass::CloudMetadata,
        (100, 64..=127, ..) => AddressClass::SharedAddressSpace,
        (127, ..) => AddressClass::Loopback,
        // Azure's host endpoint (WireServer): a public-looking address that hands out the
        // VM's certificates and extension settings, reachable from every Azure VM.
        (168, 63, 129, 16) => AddressClass::CloudMetadata,
        // AWS/GCP/Azure metadata, the AWS ECS task-metadata endpoint and the AWS EKS pod
        // identity agent.
        (169, 254, 169, 254) | (169, 254, 170, 2) | (169, 254, 170, 23) => {
            AddressClass::CloudMetadata
        }
        (169, 254, ..) => AddressClass::LinkLocal,
        (172, 16..=31, ..) => AddressClass::Private,
        // Oracle Cloud's metadata service.
        (192, 0, 0, 192) => AddressClass::CloudMetadata,
        (192, 0, 0, _) => AddressClass::IetfProtocol,
        (192, 0, 2, _) => AddressClass::Documentation,
        (192, 88, 99, _) => AddressClass::Reserved,
        (192, 168, ..) => AddressClass::Private,
        (198, 18..=19, ..) => AddressClass::Benchmarking,
        (198, 51, 100, _) => AddressClass::Documentation,
        (203, 0, 113, _) => AddressClass::Documentation,
        (224..=239, ..) => AddressClass::Multicast,
        (255, 255, 255, 255) => AddressClass::Broadcast,
        (240..=255, ..) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    if ip.is_unspecified() {
        return AddressClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    if let Some(embedded) = embedded_ipv4(ip) {
        let inner = classify_v4(embedded);
        if inner != AddressClass::Public {
            return inner;
        }
        // NAT64 (what DNS64 hands out on IPv6-only networks) and 6to4 reach the public
        // address they embed; the deprecated IPv4-compatible form and Teredo have no
        // legitimate use for a feed server.
        let is_nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0];
        let is_6to4 = s[0] == 0x2002;
        return if is_nat64 || is_6to4 {
            AddressClass::Public
        } else {
            AddressClass::Reserved
        };
    }
    match s {
        // AWS's IPv6 metadata endpoint and its EKS pod identity agent sit inside the
        // unique-local range, as does Google Cloud's IPv6 metadata server.
        [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254 | 0x0023] => AddressClass::CloudMetadata,
        [0xfd20, 0x00ce, 0, 0, 0, 0, 0, 0x0254] => AddressClass::CloudMetadata,
        // Local-use NAT64 (RFC 8215): the operator's own translator, where the embedded
        // address position depends on the prefix length, so judge it like a private network.
        [0x64, 0xff9b, 0x1, ..] => AddressClass::Private,
        [0x64, ..] => AddressClass::Reserved,
        [0xff00..=0xffff, ..] => AddressClass::Multicast,
        [0xfe80..=0xfebf, ..] => AddressClass::LinkLocal,
        [0xfec0..=0xfeff, ..] => AddressClass::SiteLocal,
        [0xfc00..=0xfdff, ..] => AddressClass::UniqueLocal,
        [0x2001, 0x0db8, ..] => AddressClass::Documentation,
        [0x3fff, 0x0000..=0x0fff, ..] => AddressClass::Documentation,
        [0x2001, 0x0002, 0x0000, ..] => AddressClass::Benchmarking,
        [0x2001, 0x0000..=0x01ff, ..] => AddressClass::IetfProtocol,
        [0x0100, 0, 0, 0, ..] => AddressClass::Reserved,
        [0x2000..=0x3fff, ..] => AddressClass::Public,
        _ => AddressClass::Reserved,
    }
}

/// The IPv4 address an IPv6 address carries, for the forms that route to it: IPv4-mapped
/// `::ffff:0:0/96`, IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, and
/// Teredo `2001::/32` (whose client address is stored inverted; the server address is
/// returned when the client address is public and the server's is not).
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let join = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    match s {
        // `::` and `::1` are classified on their own; everything else in ::/96 is compatible.
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) != (0, 0) && (hi, lo) != (0, 1) => {
            Some(join(hi, lo))
        }
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(join(hi, lo)),
        [0x2002, hi, lo, ..] => Some(join(hi, lo)),
        [
            0x2001,
            0x0000,
            server_hi,
            server_lo,
            _,
            _,
            client_hi,
            client_lo,
        ] => {
            let client = join(!client_hi, !client_lo);
            let server = join(server_hi, server_lo);
            if classify_v4(client) == AddressClass::Public {
                Some(server)
            } else {
                Some(client)
            }
        }
        _ => None,
    }
}

/// An IP network in CIDR notation ("10.1.2.0/24", "fd00::/8"; a bare address is one host),
/// for the operator's list of networks exempted from the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpNetwork {
    address: IpAddr,
    prefix_len: u8,
}

/// Why a string is not a network in CIDR notation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid network {0:?}: expected an address or address/prefix such as 10.0.0.0/8")]
pub struct InvalidNetwork(pub String);

impl IpNetwork {
    /// A network from an address and a prefix length; `None` when the length is too long for
    /// the address family.
    pub fn new(address: IpAddr, prefix_len: u8) -> Option<IpNetwork> {
        let max = if address.is_ipv4() { 32 } else { 128 };
        (prefix_len <= max).then_some(IpNetwork {
            address,
            prefix_len,
        })
    }

    fn max_prefix_len(&self) -> u8 {
        if self.address.is_ipv4() { 32 } else { 128 }
    }

    /// Whether `ip` (IPv4-mapped forms folded to IPv4 first) lies in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix_len));
                let mask = mask.unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix_len));
                let mask = mask.unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpNetwork {
    type Err = InvalidNetwork;

    fn from_str(text: &str) -> Result<IpNetwork, InvalidNetwork> {
        let invalid = || InvalidNetwork(text.to_owned());
        let (address, prefix_len) = match text.trim().split_once('/') {
            Some((address, prefix)) => {
                let address: IpAddr = address.parse().map_err(|_| invalid())?;
                let prefix: u8 = prefix.parse().map_err(|_| invalid())?;
                (address, prefix)
            }
            None => {
                let address: IpAddr = text.trim().parse().map_err(|_| invalid())?;
                (address, if address.is_ipv4() { 32 } else { 128 })
            }
        };
        IpNetwork::new(address, prefix_len).ok_or_else(invalid)
    }
}

impl fmt::Display for IpNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

/// Why the guard refused a request. The messages are written for the user who subscribed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The URL (or a redirect) is not http or https.
    #[error("refused: scheme {0} is not http(s)")]
    Scheme(String),
    /// The URL carries `user:password@`, which would be sent to the server and logged.
    #[error("refused: the URL carries a user name or password")]
    UserInfo,
    /// The URL has no host part.
    #[error("refused: the URL has no host")]
    NoHost,
    /// The host is an IP literal in a refused class.
    #[error("refused: {address} is {}{}", class.describe(), allow_hint(*class))]
    Address {
        /// The address as written (before IPv4-mapped forms are folded).
        address: IpAddr,
        /// Why it is refused.
        class: AddressClass,
    },
    /// The host name resolved only to refused addresses; the first one is named.
    #[error("refused: {name} resolves to {address}, {}{}", class.describe(), allow_hint(*class))]
    ResolvedAddress {
        /// The name that was looked up.
        name: String,
        /// The first refused address it resolved to.
        address: IpAddr,
        /// Why that address is refused.
        class: AddressClass,
    },
    /// The host name is one that only ever means a local machine (`localhost`, `*.local`,
    /// a single label…). Checked besides the addresses, as defence in depth.
    #[error("refused: {0} is a local network name{ALLOW_PRIVATE_HINT}")]
    LocalName(String),
    /// The host name is a cloud metadata service's ([`is_metadata_name`]). Never allowed.
    #[error("refused: {0} is a cloud metadata service")]
    MetadataName(String),
    /// The per-feed proxy URL has a scheme other than http, https, socks5 or socks5h.
    #[error("refused: proxy scheme {0} is not http, https, socks5 or socks5h")]
    ProxyScheme(String),
}

/// What a refusal the operator can lift adds: the setting that lifts it.
const ALLOW_PRIVATE_HINT: &str = " (to allow this host alone, list it in \
     TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set \
     TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)";

/// What a refusal only the list of allowed networks can lift adds.
const ALLOWED_NETWORKS_HINT: &str = " (to allow it, list it in TIDINGS_ALLOWED_NETWORKS)";

/// The hint for a refused address class: the settings that lift it, else nothing.
fn allow_hint(class: AddressClass) -> &'static str {
    if class.is_lifted_by_private_networks() {
        ALLOW_PRIVATE_HINT
    } else if class.is_never_allowed() {
        ""
    } else {
        ALLOWED_NETWORKS_HINT
    }
}

/// The operator's outbound policy: which addresses, beyond public ones, may be reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Lift the loopback, RFC 1918, CGNAT, unique-local and site-local ranges and local names
    /// (`TIDINGS_ALLOW_PRIVATE_NETWORKS=true`): for feeds on a LAN and for tests. Unspecified
    /// addresses and cloud metadata endpoints stay refused.
    pub allow_private_networks: bool,
    /// Networks exempted from the guard one by one (an internal feed host), except for the
    /// never-allowed classes (`TIDINGS_ALLOWED_NETWORKS`).
    pub allowed_networks: Vec<IpNetwork>,
    /// Host names exempted from the guard (`TIDINGS_ALLOWED_NETWORKS`), in lower case without
    /// a final dot: the name passes the local-name check and every address it resolves to is
    /// allowed, except for the never-allowed classes. Only the exact name: not its subdomains.
    pub allowed_hosts: Vec<String>,
}

/// Why an entry of `TIDINGS_ALLOWED_NETWORKS` is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAllowed {
    /// Neither an address, a network in CIDR notation nor a host name.
    #[error(
        "invalid entry {0:?}: expected an address, a network such as 10.1.2.0/24 or a host \
         name such as feeds.corp.example"
    )]
    Syntax(String),
    /// An entry that names only addresses or services no setting may open.
    #[error("{0:?} is {1}, which is never allowed")]
    NeverAllowed(String, &'static str),
}

/// Reads the operator's list of allowed networks and hosts: comma-separated addresses,
/// networks in CIDR notation and host names, blanks ignored. Entries that can only name a
/// never-allowed address (a cloud metadata address, `0.0.0.0`) or a metadata service's name
/// are refused, so that the operator learns at start-up that they would not work.
pub fn parse_allowed(text: &str) -> Result<(Vec<IpNetwork>, Vec<String>), InvalidAllowed> {
    let (mut networks, mut hosts) = (Vec::new(), Vec::new());
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if let Ok(network) = entry.parse::<IpNetwork>() {
            let class = classify(network.address);
            if network.prefix_len == network.max_prefix_len() && class.is_never_allowed() {
                return Err(InvalidAllowed::NeverAllowed(entry.into(), class.describe()));
            }
            networks.push(network);
            continue;
        }
        let name = entry.trim_end_matches('.').to_ascii_lowercase();
        let is_name = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !is_name || name.parse::<IpAddr>().is_ok() {
            return Err(InvalidAllowed::Syntax(entry.into()));
        }
        if is_metadata_name(&name) {
            return Err(InvalidAllowed::NeverAllowed(
                entry.into(),
                "a cloud metadata service",
            ));
        }
        hosts.push(name);
    }
    Ok((networks, hosts))
}

impl AddressPolicy {
    /// Checks one address, as resolved or as written in a URL.
    pub fn check_ip(&self, address: IpAddr) -> Result<(), Refusal> {
        match self.refused_class(address) {
            None => Ok(()),
            Some(class) => Err(Refusal::Address { address, class }),
        }
    }

    /// Checks the address a request to `host` (the URL's host, as the resolver saw it) reached:
    /// as [`AddressPolicy::check_ip`], except that an allowed host may reach any address but
    /// the never-allowed ones.
    pub fn check_ip_for_host(&self, host: Option<&str>, address: IpAddr) -> Result<(), Refusal> {
        match self.refused_class_for_host(host, address) {
            None => Ok(()),
            Some(class) => Err(Refusal::Address { address, class }),
        }
    }

    /// The class that makes `address` refused for a request to `host`, or `None` when it may
    /// be reached (see [`AddressPolicy::check_ip_for_host`]).
    pub fn refused_class_for_host(
        &self,
        host: Option<&str>,
        address: IpAddr,
    ) -> Option<AddressClass> {
        let class = classify(address);
        if host.is_some_and(|host| self.is_allowed_host(host)) && !class.is_never_allowed() {
            return None;
        }
        self.refused_class(address)
    }

    /// Whether `name` is one of the operator's allowed host names.
    fn is_allowed_host(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.');
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
    }

    /// The class that makes `address` refused, or `None` when it may be reached.
    pub fn refused_class(&self, address: IpAddr) -> Option<AddressClass> {
        let class = classify(address);
        let allowed = class == AddressClass::Public
            || (!class.is_never_allowed()
                && ((self.allow_private_networks && class.is_lifted_by_private_networks())
                    || self.allowed_networks.iter().any(|n| n.contains(address))));
        (!allowed).then_some(class)
    }

    /// Checks a host name before it is looked up: names that only ever mean the local
    /// machine or the local network are refused unless private networks are allowed or the
    /// name is an allowed host; a metadata service's name is always refused.
    pub fn check_host_name(&self, name: &str) -> Result<(), Refusal> {
        if is_metadata_name(name) {
            return Err(Refusal::MetadataName(name.to_owned()));
        }
        if self.allow_private_networks || self.is_allowed_host(name) || !is_local_name(name) {
            Ok(())
        } else {
            Err(Refusal::LocalName(name.to_owned()))
        }
    }

    /// Checks everything a URL says before any connection: scheme, credentials, and the
    /// host (IP literals by address, since they never reach the resolver; names by shape).
    /// The url crate has already folded decimal, octal, hex and short IPv4 spellings into
    /// an address, so no host is ever string-matched as an address here.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        match url.scheme() {
            "http" | "https" => {}
            other => return Err(Refusal::Scheme(other.to_owned())),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::UserInfo);
        }
        self.check_host(url.host())
    }

    fn check_host(&self, host: Option<Host<&str>>) -> Result<(), Refusal> {
        match host {
            None => Err(Refusal::NoHost),
            Some(Host::Ipv4(v4)) => self.check_ip(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.check_ip(IpAddr::V6(v6)),
            Some(Host::Domain(name)) => self.check_host_name(name),
        }
    }

    /// Checks a per-feed proxy URL: its scheme, and its host like any target (a proxy on a
    /// private address needs `allow_private_networks` or an allowed network).
    pub fn check_proxy_url(&self, url: &Url) -> Result<(), Refusal> {
        match url.scheme() {
            "http" | "https" | "socks5" | "socks5h" => {}
            other => return Err(Refusal::ProxyScheme(other.to_owned())),
        }
        // socks URLs are not "special" to the URL parser, so their host stays an opaque
        // string ("127.0.0.1", "0x7f.1"); read it again as an http host to fold IPv4 forms.
        let host = url.host_str().filter(|host| !host.is_empty());
        let as_http = host.and_then(|host| Url::parse(&format!("http://{host}/")).ok());
        self.check_host(as_http.as_ref().and_then(Url::host))
    }

    /// Reads a per-feed proxy URL an administrator typed and checks it like
    /// [`AddressPolicy::check_proxy_url`]. The error is a sentence for that administrator
    /// saying what is wrong (add [`PROXY_URL_FORMS`] for what is allowed); it names the URL
    /// with its credentials hidden, so it can be logged and shown.
    pub fn parse_proxy_url(&self, text: &str) -> Result<Url, String> {
        let text = text.trim();
        let shown = crate::redact_url(text);
        let url = Url::parse(text)
            .map_err(|error| format!("The proxy URL {shown} cannot be read ({error})."))?;
        self.check_proxy_url(&url)
            .map_err(|refusal| format!("The proxy URL {shown} is {refusal}."))?;
        Ok(url)
    }
}

/// What a per-feed proxy URL may be, for the answer to one that is refused.
pub const PROXY_URL_FORMS: &str = "Give the proxy as http://, https://, socks5:// or \
     socks5h:// followed by its host and port (a user name and password may come before the \
     host), e.g. socks5h://proxy.example.com:1080; a proxy on a private address needs \
     TIDINGS_ALLOW_PRIVATE_NETWORKS=true or its network in TIDINGS_ALLOWED_NETWORKS.";

/// Whether a host name is a cloud metadata service's: Google Cloud's `metadata.google.internal`
/// and `metadata.goog`, the bare `metadata` (Google Cloud's search domain completes it) and
/// AWS's `instance-data` names. They resolve to never-allowed addresses
/// anyway; refusing the names too keeps a resolver that answers otherwise from mattering.
pub fn is_metadata_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    const METADATA_NAMES: [&str; 5] = [
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    ];
    METADATA_NAMES.contains(&name.as_str())
}

/// Whether a host name only ever names the local machine or the local network. Single-label
/// names count: resolvers complete them with search domains into internal names.
pub fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    const LOCAL_SUFFIXES: [&str; 6] = [
        ".localhost",
        ".local",
        ".internal",
        ".localdomain",
        ".home.arpa",
        ".lan",
    ];
    name.is_empty()
        || name == "localhost"
        || !name.contains('.')
        || LOCAL_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect(text)
    }

    #[test]
    fn classifies_every_special_range() {
        use AddressClass::*;
        let table: &[(&str, AddressClass)] = &[
            // IPv4
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", ThisNetwork),
            ("0.255.255.255", ThisNetwork),
            ("1.1.1.1", Public),
            ("8.8.8.8", Public),
            ("9.255.255.255", Public),
            ("10.0.0.0", Private),
            ("10.0.0.5", Private),
            ("10.255.255.255", Private),
            ("11.0.0.0", Public),
            ("100.63.255.255", Public),
            ("100.64.0.0", SharedAddressSpace),
            ("100.127.255.255", SharedAddressSpace),
            ("100.128.0.0", Public),
            ("100.100.100.200", CloudMetadata),
            ("126.255.255.255", Public),
            ("127.0.0.0", Loopback),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("128.0.0.0", Public),
            ("169.253.255.255", Public),
            ("169.254.0.1", LinkLocal),
            ("169.254.169.254", CloudMetadata),
            ("169.254.170.2", CloudMetadata),
            ("169.254.255.255", LinkLocal),
            ("169.255.0.0", Public),
            ("172.15.255.255", Public),
            ("172.16.0.0", Private),
            ("172.31.255.255", Private),
            ("172.32.0.0", Public),
            ("192.0.0.1", IetfProtocol),
            ("192.0.0.192", CloudMetadata),
            ("192.0.1.1", Public),
            ("192.0.2.1", Documentation),
            ("192.88.99.1", Reserved),
            ("192.167.255.255", Public),
            ("192.168.0.1", Private),
            ("192.168.255.255", Private),
            ("192.169.0.0", Public),
            ("198.17.255.255", Public),
            ("198.18.0.0", Benchmarking),
            ("198.19.255.255", Benchmarking),
            ("198.20.0.0", Public),
            ("198.51.100.7", Documentation),
            ("203.0.113.9", Documentation),
            ("203.0.114.0", Public),
            ("223.255.255.255", Public),
            ("224.0.0.1", Multicast),
            ("239.255.255.255", Multicast),
            ("240.0.0.0", Reserved),
            ("254.255.255.255", Reserved),
            ("255.255.255.254", Reserved),
            ("255.255.255.255", Broadcast),
            // IPv6
            ("::", Unspecified),
            ("::1", Loopback),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:169.254.169.254", CloudMetadata),
            ("::ffff:0.0.0.0", Unspecified),
            ("::ffff:8.8.8.8", Public),
            ("::127.0.0.1", Loopback),
            ("::10.0.0.1", Private),
            ("::8.8.8.8", Reserved),
            ("::2", ThisNetwork),
            ("64:ff9b::7f00:1", Loopback),
            ("64:ff9b::a9fe:a9fe", CloudMetadata),
            ("64:ff9b::808:808", Public),
            ("64:ff9b:1::1", Private),
            ("64:ff9c::1", Reserved),
            ("2002:7f00:1::", Loopback),
            ("2002:c0a8:101::1", Private),
            ("2002:808:808::1", Public),
            // Teredo: server 65.54.227.120, client 127.0.0.1 stored inverted (80ff:fffe).
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", Loopback),
            // Teredo with public client 8.8.8.8 (f7f7:f7f7) and server 10.0.0.1.
            ("2001:0:a00:1:0:0:f7f7:f7f7", Private),
            // Teredo with both public: still refused, nothing legitimate uses it.
            ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", Reserved),
            ("2001:2::1", Benchmarking),
            ("2001:1::1", IetfProtocol),
            ("2001:1ff::1", IetfProtocol),
            ("2001:200::1", Public),
            ("2001:db8::1", Documentation),
            ("2001:db8:ffff::1", Documentation),
            ("3fff::1", Documentation),
            ("3fff:fff::1", Documentation),
            ("3fff:1000::1", Public),
            ("100::1", Reserved),
            ("100:0:0:1::", Reserved),
            ("fc00::1", UniqueLocal),
            ("fd12:3456::1", UniqueLocal),
            ("fd00:ec2::254", CloudMetadata),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", SiteLocal),
            ("feff::1", SiteLocal),
            ("ff02::1", Multicast),
            ("ff0e::1", Multicast),
            ("2606:4700:4700::1111", Public),
            ("2a00:1450:4001::1", Public),
            ("1fff::1", Reserved),
            ("4000::1", Reserved),
            ("::1:0:0:0", Reserved),
        ];
        for (text, expected) in table {
            assert_eq!(classify(ip(text)), *expected, "{text}");
        }
    }

    #[test]
    fn default_policy_allows_only_public_addresses() {
        let policy = AddressPolicy::default();
        assert!(policy.check_ip(ip("93.184.215.14")).is_ok());
        assert!(policy.check_ip(ip("2606:2800:21f:cb07::1")).is_ok());
        for refused in [
            "127.0.0.1",
            "10.0.0.5",
            "100.64.0.1",
            "169.254.169.254",
            "::1",
            "::ffff:127.0.0.1",
            "fd00::1",
            "0.0.0.0",
            "::",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(policy.check_ip(ip(refused)).is_err(), "{refused}");
        }
    }

    #[test]
    fn refusal_messages_name_the_address_and_the_reason() {
        let policy = AddressPolicy::default();
        assert_eq!(
            policy.check_ip(ip("10.0.0.5")).unwrap_err().to_string(),
            "refused: 10.0.0.5 is a private address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
        );
        assert_eq!(
            policy
                .check_ip(ip("::ffff:127.0.0.1"))
                .unwrap_err()
                .to_string(),
            "refused: ::ffff:127.0.0.1 is a loopback address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
        );
        assert_eq!(
            Refusal::Scheme("ftp".into()).to_string(),
            "refused: scheme ftp is not http(s)"
        );
        // No setting lifts a metadata address, so no setting is named.
        assert_eq!(
            policy
                .check_ip(ip("169.254.169.254"))
                .unwrap_err()
                .to_string(),
            "refused: 169.254.169.254 is a cloud metadata address"
        );
        assert!(
            Refusal::LocalName("nas.lan".into())
                .to_string()
                .contains("TIDINGS_ALLOW_PRIVATE_NETWORKS=true"),
        );
        let resolved = Refusal::ResolvedAddress {
            name: "public.test".into(),
            address: ip("127.0.0.1"),
            class: AddressClass::Loopback,
        };
        assert_eq!(
            resolved.to_string(),
            "refused: public.test resolves to 127.0.0.1, a loopback address (to allow this host alone, list it in TIDINGS_ALLOWED_NETWORKS; to allow feeds on every private network, set TIDINGS_ALLOW_PRIVATE_NETWORKS=true or --allow-private-networks)"
        );
    }

    #[test]
    fn private_networks_lift_lan_ranges_but_never_metadata_or_unspecified() {
        let policy = AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        };
        for allowed in [
            "127.0.0.1",
            "10.0.0.5",
            "172.16.1.1",
            "192.168.1.1",
            "100.64.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "fd12::1",
            "64:ff9b::a00:1",
        ] {
            assert!(policy.check_ip(ip(allowed)).is_ok(), "{allowed}");
        }
        for refused in [
            "0.0.0.0",
            "0.1.2.3",
            "::",
            "::ffff:0.0.0.0",
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "169.254.170.2",
            "100.100.100.200",
            "fd00:ec2::254",
            "169.254.1.1",
            "fe80::1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
        ] {
            assert!(policy.check_ip(ip(refused)).is_err(), "{refused}");
        }
        assert!(policy.check_host_name("localhost").is_ok());
        assert!(policy.check_host_name("nas.local").is_ok());
    }

    #[test]
    fn allowed_networks_exempt_exactly_their_range() {
        let policy = AddressPolicy {
            allow_private_networks: false,
            allowed_networks: vec![
                "127.0.0.2/32".parse().unwrap(),
                "10.1.0.0/16".parse().unwrap(),
                "fd00:1::/32".parse().unwrap(),
                "169.254.0.0/16".parse().unwrap(),
                "0.0.0.0/0".parse().unwrap(),
            ],
            allowed_hosts: vec![],
        };
        assert!(policy.check_ip(ip("127.0.0.2")).is_ok());
        assert!(policy.check_ip(ip("::ffff:127.0.0.2")).is_ok());
        assert!(policy.check_ip(ip("10.1.200.3")).is_ok());
        assert!(policy.check_ip(ip("fd00:1:2::3")).is_ok());
        assert!(policy.check_ip(ip("fd00:2::3")).is_err());
        // Never-allowed classes stay refused even inside an allowed network.
        assert!(policy.check_ip(ip("169.254.169.254")).is_err());
        assert!(policy.check_ip(ip("0.0.0.0")).is_err());
        let narrow = AddressPolicy {
            allowed_networks: vec!["127.0.0.2".parse().unwrap()],
            ..AddressPolicy::default()
        };
        assert!(narrow.check_ip(ip("127.0.0.1")).is_err());
        assert!(narrow.check_ip(ip("127.0.0.3")).is_err());
    }

    /// Cloud metadata and host endpoints stay refused with every setting at its most open:
    /// private networks allowed, every address listed, the name listed.
    #[test]
    fn cloud_metadata_and_host_endpoints_are_never_allowed() {
        let open = AddressPolicy {
            allow_private_networks: true,
            allowed_networks: vec!["0.0.0.0/0".parse().unwrap(), "::/0".parse().unwrap()],
            allowed_hosts: vec!["metadata.google.internal".into(), "metadata".into()],
        };
        for endpoint in [
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "168.63.129.16",
            "::ffff:168.63.129.16",
            "64:ff9b::a83f:8110",
            "fd00:ec2::23",
            "169.254.170.2",
            "169.254.170.23",
            "100.100.100.200",
            "192.0.0.192",
            "fd20:ce::254",
        ] {
            assert_eq!(
                classify(ip(endpoint)),
                AddressClass::CloudMetadata,
                "{endpoint}"
            );
            assert!(open.check_ip(ip(endpoint)).is_err(), "{endpoint}");
            assert!(
                open.check_ip_for_host(Some("metadata.google.internal"), ip(endpoint))
                    .is_err(),
                "{endpoint}"
            );
        }
        // Azure's host endpoint looks public: refused with the default policy too.
        assert_eq!(
            AddressPolicy::default()
                .check_ip(ip("168.63.129.16"))
                .unwrap_err()
                .to_string(),
            "refused: 168.63.129.16 is a cloud metadata address"
        );
        for name in [
            "metadata.google.internal",
            "METADATA.google.internal.",
            "metadata.goog",
            "metadata",
            "instance-data.ec2.internal",
        ] {
            assert!(open.check_host_name(name).is_err(), "{name}");
        }
        assert!(open.check_host_name("metadata.example.com").is_ok());
    }

    #[test]
    fn parses_networks() {
        assert_eq!(
            "10.0.0.0/8".parse::<IpNetwork>().unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert_eq!("::1".parse::<IpNetwork>().unwrap().to_string(), "::1/128");
        assert!("10.0.0.0/33".parse::<IpNetwork>().is_err());
        assert!("fd00::/129".parse::<IpNetwork>().is_err());
        assert!("10.0.0/8".parse::<IpNetwork>().is_err());
        assert!("example.com/8".parse::<IpNetwork>().is_err());
        assert!("10.0.0.0/-1".parse::<IpNetwork>().is_err());
        let all: IpNetwork = "::/0".parse().unwrap();
        assert!(all.contains(ip("2001:db8::1")));
        assert!(!all.contains(ip("10.0.0.1")));
    }

    #[test]
    fn every_url_spelling_of_a_refused_address_is_refused() {
        let policy = AddressPolicy::default();
        let refused = [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://127.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://0x7f.0x0.0x0.0x1/",
            "http://0177.0.0.1/",
            "http://0177.1/",
            "http://017700000001/",
            "http://127.0.0.1./",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::127.0.0.1]/",
            "http://0.0.0.0/",
            "http://0/",
            "http://[::]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "http://0251.0376.0251.0376/",
            "http://10.0.0.5/",
            "http://012.0.0.5/",
            "http://167772165/",
            "http://192.168.1.1:8080/",
            "http://172.16.0.1/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "http://4294967295/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://app.localhost/",
            "http://printer.local/",
            "http://metadata.google.internal/",
            "http://intranet/",
            "https://127.0.0.1/",
            "HTTP://127.0.0.1/",
            "http://%31%32%37.0.0.1/",
            "http://127。0。0。1/",
            "http://１２７.0.0.1/",
        ];
        for text in refused {
            let url = Url::parse(text).expect(text);
            assert!(policy.check_url(&url).is_err(), "{text} -> {url}");
        }
    }

    #[test]
    fn schemes_credentials_and_hosts_are_checked() {
        let policy = AddressPolicy::default();
        let check = |text: &str| policy.check_url(&Url::parse(text).unwrap());
        assert_eq!(
            check("ftp://example.com/feed"),
            Err(Refusal::Scheme("ftp".into()))
        );
        assert_eq!(
            check("file:///etc/passwd"),
            Err(Refusal::Scheme("file".into()))
        );
        assert_eq!(
            check("gopher://example.com/"),
            Err(Refusal::Scheme("gopher".into()))
        );
        assert_eq!(
            check("javascript:alert(1)"),
            Err(Refusal::Scheme("javascript".into()))
        );
        assert_eq!(check("http://user:pw@example.com/"), Err(Refusal::UserInfo));
        assert_eq!(check("http://user@example.com/"), Err(Refusal::UserInfo));
        assert_eq!(check("http://:pw@example.com/"), Err(Refusal::UserInfo));
        assert!(check("https://example.com/feed.xml").is_ok());
        assert!(check("http://example.com:8080/feed").is_ok());
        assert!(check("http://8.8.8.8/").is_ok());
        assert!(check("http://[2606:4700:4700::1111]/").is_ok());
        assert!(check("https://xn--r8jz45g.jp/").is_ok());
        assert!(check("https://例え.jp/").is_ok());
    }

    #[test]
    fn proxy_urls_are_checked() {
        let policy = AddressPolicy::default();
        let check = |text: &str| policy.check_proxy_url(&Url::parse(text).unwrap());
        assert!(check("socks5://proxy.example.com:1080").is_ok());
        assert!(check("http://proxy.example.com:3128").is_ok());
        assert_eq!(
            check("ftp://proxy.example.com"),
            Err(Refusal::ProxyScheme("ftp".into()))
        );
        assert!(check("http://169.254.169.254:80").is_err());
        assert!(check("socks5://127.0.0.1:1080").is_err());
        assert!(check("socks5h://0x7f.1:1080").is_err());
        assert!(check("socks5://2130706433:1080").is_err());
        assert!(check("socks5://[::1]:1080").is_err());
        assert!(check("socks5://localhost:1080").is_err());
        assert!(check("socks5://user:pw@proxy.example.com:1080").is_ok());
        let lan = AddressPolicy {
            allow_private_networks: true,
            ..AddressPolicy::default()
        };
        assert!(
            lan.check_proxy_url(&Url::parse("socks5://127.0.0.1:1080").unwrap())
                .is_ok()
        );
    }

    #[test]
    fn local_names() {
        for local in [
            "localhost",
            "localhost.",
            "LocalHost",
            "a.localhost",
            "nas.local",
            "metadata.google.internal",
            "box.localdomain",
            "router.home.arpa",
            "printer.lan",
            "intranet",
            "",
        ] {
            assert!(is_local_name(local), "{local}");
        }
        for public in [
            "example.com",
            "example.com.",
            "localhost.example.com",
            "local.example.com",
            "internal.example.org",
            "xn--r8jz45g.jp",
        ] {
            assert!(!is_local_name(public), "{public}");
        }
    }

    #[test]
    fn classification_never_panics_and_mapped_forms_agree_with_ipv4() {
        // A deterministic sweep: every /8 at several offsets, in both spellings.
        for a in 0..=255u8 {
            for (b, c, d) in [
                (0, 0, 0),
                (0, 0, 1),
                (64, 0, 1),
                (128, 7, 9),
                (255, 255, 255),
            ] {
                let v4 = Ipv4Addr::new(a, b, c, d);
                let mapped = IpAddr::V6(v4.to_ipv6_mapped());
                assert_eq!(classify(IpAddr::V4(v4)), classify(mapped), "{v4}");
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15_u128;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v6 = Ipv6Addr::from(state);
            let _ = classify(IpAddr::V6(v6));
            let _ = embedded_ipv4(v6);
            let _ = classify(IpAddr::V4(Ipv4Addr::from(state as u32)));
        }
    }
}
