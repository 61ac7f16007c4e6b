//! The network path between a study's server and its client: loopback (the kernel's shortcut:
//! no device, no qdisc), or two network namespaces joined by a veth pair, so packets cross a
//! device with a qdisc, optionally shaped with `tc` (netem for delay and loss, tbf for rate).
//! Unshaped, both paths hand a packet to the same per-CPU backlog and measure alike
//! (bench/network.md); the pair is where shaping goes.
//!
//! The namespaces are `ringside-<pid>-server` and `ringside-<pid>-client`, made with iproute2's
//! `ip` (as a user would), addressed from 198.18.0.0/15 (RFC 2544's benchmarking range) with no
//! route anywhere else: nothing leaves the pair. `Veth` removes both when dropped (a study ends,
//! fails or is interrupted), which also removes the pair; namespaces of a ringside that was
//! killed are removed by the next one that opens a path.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::row::params::{Param, Params};
use anyhow::Context;
use serde_json::{Map, Value};

/// The server's and the client's addresses on the pair (a /30 of 198.18.0.0/15).
pub const VETH_SERVER_ADDRESS: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
pub const VETH_CLIENT_ADDRESS: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const VETH_PREFIX_BITS: u8 = 30;
/// The device names, one in each namespace.
const SERVER_DEVICE: &str = "rs-server";
const CLIENT_DEVICE: &str = "rs-client";
/// Every namespace ringside makes starts with this.
const NAMESPACE_PREFIX: &str = "ringside-";

/// Which path a study's packets take, as its flags asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Network {
    /// 127.0.0.1: no device, no qdisc, no offloads.
    #[default]
    Loopback,
    /// Two network namespaces joined by a veth pair (root only).
    Veth,
}

/// How `tc` shapes the veth pair, each direction alike.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shaping {
    /// Round-trip time added: half of it on each direction (netem delay).
    pub rtt: Option<Duration>,
    /// Rate of each direction in bits/s (tbf, or netem's rate beside a delay or loss).
    pub rate_bits_per_sec: Option<u64>,
    /// Share of packets dropped in each direction, in percent (netem loss).
    pub loss_percent: Option<f64>,
}

impl Shaping {
    pub fn is_none(&self) -> bool {
        *self == Shaping::default()
    }

    /// The qdisc (after `root`) that shapes one direction; None when nothing is shaped.
    fn qdisc(&self) -> Option<Vec<String>> {
        if self.is_none() {
            return None;
        }
        let rate = self.rate_bits_per_sec.map(|bits| format!("{bits}bit"));
        if self.rtt.is_none() && self.loss_percent.is_none() {
            let bits = self.rate_bits_per_sec.expect("shaping by rate alone");
            // One millisecond's worth of bytes, at least 64 KiB so a GSO packet fits.
            let burst_bytes = (bits / 8 / 1000).max(64 * 1024);
            let tbf = ["tbf", "rate", &rate.expect("a rate"), "burst"];
            let mut qdisc: Vec<String> = tbf.into_iter().map(String::from).collect();
            qdisc.extend([burst_bytes.to_string(), "latency".into(), "10ms".into()]);
            return Some(qdisc);
        }
        // A deep queue, so that netem's own limit (1000 packets) is not what drops.
        let mut qdisc: Vec<String> = vec!["netem".into(), "limit".into(), "100000".into()];
        if let Some(rtt) = self.rtt {
            qdisc.extend(["delay".into(), format!("{}us", rtt.as_micros() / 2)]);
        }
        if let Some(loss) = self.loss_percent {
            qdisc.extend(["loss".into(), format!("{loss}%")]);
        }
        if let Some(rate) = rate {
            qdisc.extend(["rate".into(), rate]);
        }
        Some(qdisc)
    }
}

/// The path as a study asked for it, before anything is set up.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathPlan {
    pub network: Network,
    pub shaping: Shaping,
}

impl PathPlan {
    /// Sets the path up: nothing for loopback; the namespaces, the pair, its addresses and
    /// its shaping for veth (all of it removed again if a later step fails).
    pub fn open(&self) -> anyhow::Result<NetPath> {
        self.check()?;
        match self.network {
            Network::Loopback => Ok(NetPath::Loopback),
            Network::Veth => Veth::create(self.shaping).map(NetPath::Veth),
        }
    }

    /// Refuses, with the reason, a path that cannot be set up as asked: shaping without a
    /// device to shape, or veth without root.
    pub fn check(&self) -> anyhow::Result<()> {
        match self.network {
            Network::Loopback => anyhow::ensure!(
                self.shaping.is_none(),
                "--rtt, --link-rate and --loss shape the veth pair: add --network veth (loopback \
                 has no device to shape)"
            ),
            Network::Veth => anyhow::ensure!(
                rustix::process::geteuid().is_root(),
                "--network veth needs root: it creates two network namespaces and a veth pair \
                 (run it with sudo, or use --network loopback)"
            ),
        }
        Ok(())
    }

    /// The flags that ask a study for this path (what `run` passes to its network steps).
    pub fn args(&self) -> Vec<String> {
        let mut args = match self.network {
            Network::Loopback => vec!["--network".to_string(), "loopback".into()],
            Network::Veth => vec!["--network".to_string(), "veth".into()],
        };
        let shaping = self.shaping;
        if let Some(rtt) = shaping.rtt {
            args.extend(["--rtt".into(), format!("{}us", rtt.as_micros())]);
        }
        if let Some(rate) = shaping.rate_bits_per_sec {
            args.extend(["--link-rate".into(), format!("{rate}bit")]);
        }
        if let Some(loss) = shaping.loss_percent {
            args.extend(["--loss".into(), format!("{loss}%")]);
        }
        args
    }

    /// What rows record about the path: `network`, and the shaping asked for.
    pub fn params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        let name = match self.network {
            Network::Loopback => "loopback",
            Network::Veth => "veth",
        };
        params.put(Param::Network, name);
        let shaping = self.shaping;
        if let Some(rtt) = shaping.rtt {
            params.put(Param::RttUs, rtt.as_micros() as u64);
        }
        if let Some(rate) = shaping.rate_bits_per_sec {
            params.put(Param::RateBitsPerSec, rate);
        }
        if let Some(loss) = shaping.loss_percent {
            params.put(Param::LossPercent, loss);
        }
        params
    }
}

/// A path that is set up, for as long as it lives.
pub enum NetPath {
    Loopback,
    Veth(Veth),
    /// Servers listen on this address of the machine, for loads on other hosts (`--listen-on`).
    Listen(IpAddr),
}

impl NetPath {
    /// Where a server on this path listens (port 0: the kernel chooses).
    pub fn server_listen(&self) -> SocketAddr {
        let address = match self {
            NetPath::Loopback => IpAddr::V4(Ipv4Addr::LOCALHOST),
            NetPath::Veth(_) => IpAddr::V4(VETH_SERVER_ADDRESS),
            NetPath::Listen(address) => *address,
        };
        SocketAddr::new(address, 0)
    }

    /// A command that runs `program` on the server's side of the path: itself on loopback,
    /// `ip netns exec <server namespace> program` on veth (which execs it: the pid stays).
    pub fn server_command(&self, program: &std::path::Path) -> Command {
        match self {
            NetPath::Loopback | NetPath::Listen(_) => Command::new(program),
            NetPath::Veth(veth) => {
                let mut command = Command::new("ip");
                command
                    .args(["netns", "exec", &veth.server_namespace])
                    .arg(program);
                command
            }
        }
    }

    /// Runs `work` on a thread in the client's namespace (threads it starts stay there);
    /// on loopback, on the calling thread.
    pub fn as_client<T: Send>(&self, work: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
        let NetPath::Veth(veth) = self else {
            return Ok(work());
        };
        let path = format!("/run/netns/{}", veth.client_namespace);
        let namespace =
            std::fs::File::open(&path).with_context(|| format!("cannot open {path}"))?;
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    rustix::thread::move_into_link_name_space(
                        std::os::fd::AsFd::as_fd(&namespace),
                        Some(rustix::thread::LinkNameSpaceType::Network),
                    )
                    .context("cannot enter the client's network namespace")?;
                    Ok(work())
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// Two namespaces joined by a veth pair, removed when dropped.
pub struct Veth {
    pub server_namespace: String,
    pub client_namespace: String,
}

impl Veth {
    fn create(shaping: Shaping) -> anyhow::Result<Veth> {
        remove_stale_namespaces();
        let pid = std::process::id();
        let server_namespace = format!("{NAMESPACE_PREFIX}{pid}-server");
        let client_namespace = format!("{NAMESPACE_PREFIX}{pid}-client");
        ip(&["netns", "add", &server_namespace])?;
        // From here on, dropping `veth` removes whatever was made.
        let veth = Veth {
            server_namespace,
            client_namespace,
        };
        ip(&["netns", "add", &veth.client_namespace])?;
        veth.connect(shaping)?;
        Ok(veth)
    }

    /// The pair, its addresses, its links up, and its shaping on both ends.
    fn connect(&self, shaping: Shaping) -> anyhow::Result<()> {
        let (server, client) = (&self.server_namespace, &self.client_namespace);
        ip(&[
            "-n",
            server,
            "link",
            "add",
            "name",
            SERVER_DEVICE,
            "type",
            "veth",
            "peer",
            "name",
            CLIENT_DEVICE,
            "netns",
            client,
        ])?;
        let ends = [
            (server, SERVER_DEVICE, VETH_SERVER_ADDRESS),
            (client, CLIENT_DEVICE, VETH_CLIENT_ADDRESS),
        ];
        for (namespace, device, address) in ends {
            let cidr = format!("{address}/{VETH_PREFIX_BITS}");
            ip(&["-n", namespace, "addr", "add", &cidr, "dev", device])?;
            ip(&["-n", namespace, "link", "set", device, "up"])?;
            ip(&["-n", namespace, "link", "set", "lo", "up"])?;
            if let Some(qdisc) = shaping.qdisc() {
                let mut args = vec!["-n", namespace, "qdisc", "add", "dev", device, "root"];
                args.extend(qdisc.iter().map(String::as_str));
                tc(&args)?;
            }
        }
        Ok(())
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Removing a namespace removes the veth end in it, and with it the pair.
        for namespace in [&self.client_namespace, &self.server_namespace] {
            if namespace_exists(namespace) {
                if let Err(error) = ip(&["netns", "del", namespace]) {
                    eprintln!("ringside: cannot remove network namespace {namespace}: {error:#}");
                }
            }
        }
    }
}

/// Runs `ip ARGS`, its error output in the error.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    run_tool("ip", args).map_err(|error| {
        anyhow::anyhow!("{error} (--network veth needs iproute2's `ip`: apt-get install iproute2)")
    })
}

/// Runs `tc ARGS`, explaining a qdisc this kernel lacks.
fn tc(args: &[&str]) -> anyhow::Result<()> {
    run_tool("tc", args).map_err(|error| {
        let text = error.to_string();
        if text.contains("qdisc kind is unknown") && args.contains(&"netem") {
            anyhow::anyhow!(
                "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), which --rtt and --loss \
                 need; --link-rate alone shapes with tbf ({text})"
            )
        } else if text.contains("qdisc kind is unknown") {
            anyhow::anyhow!("this kernel has no tbf qdisc, which --link-rate needs ({text})")
        } else {
            error
        }
    })
}

fn run_tool(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let output = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{tool}`"))?;
    anyhow::ensure!(
        output.status.success(),
        "`{tool} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

fn namespace_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

/// Removes the namespaces of ringside processes that no longer run (killed before they could
/// clean up); those of running ones stay.
fn remove_stale_namespaces() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = stale_owner(&name) else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid.to_string()).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// The pid in a namespace name ringside made (`ringside-<pid>-server`).
fn stale_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NAMESPACE_PREFIX)?;
    let (pid, side) = rest.split_once('-')?;
    matches!(side, "server" | "client")
        .then(|| pid.parse().ok())
        .flatten()
}

/// A network interface of this machine, as rows name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    /// The driver of the device under it (`virtio_net`, `mlx5_core`); None for a virtual
    /// interface (veth, bridge, loopback), which has no device.
    pub driver: Option<String>,
    pub loopback: bool,
}

impl Interface {
    /// The interface that holds `address` on this machine (None when none does).
    pub fn holding(address: IpAddr) -> Option<Interface> {
        let name = interface_names_of(address).into_iter().next()?;
        Some(Interface::named(name))
    }

    /// The interface this machine's traffic to `target` leaves by: the one holding the local
    /// address the kernel picks for it (a UDP socket's connect sends nothing).
    pub fn toward(target: IpAddr) -> Option<Interface> {
        let unspecified: IpAddr = match target {
            IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            IpAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        let socket = std::net::UdpSocket::bind(SocketAddr::new(unspecified, 0)).ok()?;
        socket.connect(SocketAddr::new(target, 9)).ok()?;
        Interface::holding(socket.local_addr().ok()?.ip())
    }

    fn named(name: String) -> Interface {
        let class = std::path::Path::new("/sys/class/net").join(&name);
        let driver = std::fs::read_link(class.join("device/driver"))
            .ok()
            .and_then(|link| Some(link.file_name()?.to_string_lossy().into_owned()));
        let flags = std::fs::read_to_string(class.join("flags")).ok();
        let flags = flags
            .and_then(|text| u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok());
        Interface {
            loopback: flags.is_some_and(|flags| flags & libc::IFF_LOOPBACK as u32 != 0),
            name,
            driver,
        }
    }

    /// Whether traffic through it crosses a NIC: a device with a driver (a physical or a
    /// virtio NIC), with receive queues NAPI polls and pages it can send from.
    pub fn is_nic(&self) -> bool {
        self.driver.is_some() && !self.loopback
    }

    /// `eth0 (virtio_net)`, `lo (loopback)`, `veth1 (virtual, no NIC)`.
    pub fn describe(&self) -> String {
        match (&self.driver, self.loopback) {
            (_, true) => format!("{} (loopback)", self.name),
            (Some(driver), false) => format!("{} ({driver})", self.name),
            (None, false) => format!("{} (virtual, no NIC)", self.name),
        }
    }
}

/// The interface the study's traffic crosses on this machine, once known: the one holding the
/// address servers listen on for load hosts (`--listen-on`). Loopback and veth are the path
/// otherwise, and neither is a NIC.
static TRAFFIC_ROUTE: std::sync::OnceLock<Interface> = std::sync::OnceLock::new();

/// Records the interface the traffic crosses (the first one recorded stays).
pub fn set_traffic_route(interface: Interface) {
    let _ = TRAFFIC_ROUTE.set(interface);
}

/// The interface the traffic crosses, when `--listen-on` named it.
pub fn traffic_route() -> Option<&'static Interface> {
    TRAFFIC_ROUTE.get()
}

/// The names of the interfaces that hold `address` (getifaddrs).
fn interface_names_of(address: IpAddr) -> Vec<String> {
    let mut names = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list it allocated, freed below with freeifaddrs;
    // every pointer read is checked for null, and each sockaddr is read as the family it says.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return names;
        }
        let mut entry = list;
        while !entry.is_null() {
            let item = &*entry;
            entry = item.ifa_next;
            if item.ifa_addr.is_null() || item.ifa_name.is_null() {
                continue;
            }
            let found = match i32::from((*item.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let inet = &*(item.ifa_addr as *const libc::sockaddr_in);
                    IpAddr::V4(Ipv4Addr::from(u32::from_be(inet.sin_addr.s_addr)))
                }
                libc::AF_INET6 => {
                    let inet6 = &*(item.ifa_addr as *const libc::sockaddr_in6);
                    IpAddr::V6(std::net::Ipv6Addr::from(inet6.sin6_addr.s6_addr))
                }
                _ => continue,
            };
            if found == address {
                let name = std::ffi::CStr::from_ptr(item.ifa_name);
                names.push(name.to_string_lossy().into_owned());
            }
        }
        libc::freeifaddrs(list);
    }
    names
}

/// Parses a rate as tc writes it: `10gbit`, `500mbit`, `100kbit`, `1000bit` (bits/s).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let bad = || format!("'{text}' is not a rate like 10gbit, 500mbit or 100kbit");
    let number = lower.strip_suffix("bit").ok_or_else(bad)?;
    let (digits, scale) = match number.char_indices().last() {
        Some((at, 'k')) => (&number[..at], 1_000),
        Some((at, 'm')) => (&number[..at], 1_000_000),
        Some((at, 'g')) => (&number[..at], 1_000_000_000),
        _ => (number, 1),
    };
    let value: f64 = digits.parse().map_err(|_| bad())?;
    let bits = value * scale as f64;
    if !(8.0..=1e12).contains(&bits) {
        return Err(format!("'{text}' is outside 8bit to 1000gbit"));
    }
    Ok(bits as u64)
}

/// Parses a loss share: `0.1%` or `0.1` (percent).
pub fn parse_loss(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(loss) if loss > 0.0 && loss < 100.0 => Ok(loss),
        _ => Err(format!(
            "'{text}' is not a loss between 0% and 100% (e.g. 0.1%)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_losses_parse_like_tc() {
        assert_eq!(parse_rate("10gbit"), Ok(10_000_000_000));
        assert_eq!(parse_rate("1.5mbit"), Ok(1_500_000));
        assert_eq!(parse_rate("800bit"), Ok(800));
        assert!(parse_rate("10gb").is_err());
        assert!(parse_rate("0bit").is_err());
        assert_eq!(parse_loss("0.1%"), Ok(0.1));
        assert!(parse_loss("100%").is_err());
        assert!(parse_loss("x").is_err());
    }

    #[test]
    fn shaping_picks_tbf_for_rate_alone_and_netem_otherwise() {
        let rate = Shaping {
            rate_bits_per_sec: Some(1_000_000_000),
            ..Shaping::default()
        };
        assert_eq!(rate.qdisc().unwrap()[..3], ["tbf", "rate", "1000000000bit"]);
        let rtt = Shaping {
            rtt: Some(Duration::from_micros(200)),
            loss_percent: Some(0.1),
            ..rate
        };
        let netem = rtt.qdisc().unwrap().join(" ");
        assert!(netem.starts_with("netem"), "{netem}");
        assert!(
            netem.contains("delay 100us") && netem.contains("loss 0.1%"),
            "{netem}"
        );
        assert!(netem.contains("rate 1000000000bit"), "{netem}");
        assert_eq!(Shaping::default().qdisc(), None);
    }

    #[test]
    fn the_loopback_address_is_held_by_the_loopback_interface() {
        let lo = Interface::holding(IpAddr::V4(Ipv4Addr::LOCALHOST)).expect("lo holds 127.0.0.1");
        assert!(lo.loopback && !lo.is_nic(), "{lo:?}");
        assert_eq!(lo.describe(), format!("{} (loopback)", lo.name));
        let toward = Interface::toward(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(toward, Some(lo));
        assert_eq!(
            Interface::holding(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))),
            None
        );
    }

    #[test]
    fn only_ringsides_own_namespaces_count_as_stale() {
        assert_eq!(stale_owner("ringside-123-server"), Some(123));
        assert_eq!(stale_owner("ringside-123-client"), Some(123));
        assert_eq!(stale_owner("ringside-123-other"), None);
        assert_eq!(stale_owner("mine"), None);
    }
}
