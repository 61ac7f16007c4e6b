//! The flags of a network study whose load runs on other hosts (`echo`, `http` and `run`
//! share them): the hosts, how each is reached, the ringside there, and the address the
//! servers listen on.

use std::net::IpAddr;

use clap::Args;

use crate::studies::net::{LoadHost, LoadHosts};
use crate::system::network::{set_traffic_route, Interface};

#[derive(Args, Debug, Clone, Default)]
pub struct LoadHostArgs {
    /// Run the load on this host instead of here (repeatable: the runs' connections are split
    /// between the hosts, their results merged). Each run starts `ringside load` there over
    /// `ssh -o BatchMode=yes HOST` (your keys and ~/.ssh/config), every host's window at the
    /// same wall-clock time; the servers run here as always, on --listen-on. Each host is
    /// checked first: it answers, runs a ringside of this result schema, reaches --listen-on,
    /// and its clock agrees with this machine's. See docs/multi-host.md.
    #[arg(long = "load-host", value_name = "HOST", value_parser = host_arg, global = true)]
    pub load_host: Vec<String>,
    /// A load host reached by a command instead of ssh (repeatable): `PREFIX ringside load
    /// ...` runs through sh, e.g. 'ip netns exec NS' or 'kubectl exec -i POD --' (-i: the
    /// load stops when its standard input ends).
    #[arg(long = "load-cmd", value_name = "PREFIX", value_parser = prefix_arg, global = true)]
    pub load_cmd: Vec<String>,
    /// The ringside binary on the load hosts, when `ringside` is not on their PATH.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "ringside",
        value_parser = bin_arg,
        global = true
    )]
    pub load_bin: String,
    /// With --load-host or --load-cmd: the address of this machine the servers listen on,
    /// which the load hosts reach (e.g. its address on the network between them). The NIC on
    /// its route opens the engines and claims that need one (`engines`, `claims list`).
    #[arg(long, value_name = "ADDR", global = true)]
    pub listen_on: Option<IpAddr>,
}

impl LoadHostArgs {
    /// The hosts as a plan, with the load's threads and CPUs on every host; None when the
    /// load runs here.
    pub fn plan(
        &self,
        client_threads: Option<usize>,
        client_cpus: Vec<usize>,
    ) -> anyhow::Result<Option<LoadHosts>> {
        let hosts: Vec<LoadHost> = (self.load_host.iter().cloned().map(LoadHost::Ssh))
            .chain(self.load_cmd.iter().cloned().map(LoadHost::Prefix))
            .collect();
        match (hosts.is_empty(), self.listen_on) {
            (true, None) => Ok(None),
            (true, Some(_)) => anyhow::bail!(
                "--listen-on is where load hosts reach the servers: add --load-host or \
                 --load-cmd, or leave it out to run the load here"
            ),
            (false, None) => anyhow::bail!(
                "--load-host and --load-cmd need --listen-on ADDR: the address of this machine \
                 that the load hosts reach the servers at"
            ),
            (false, Some(listen_on)) => {
                anyhow::ensure!(
                    !listen_on.is_unspecified(),
                    "--listen-on {listen_on}: give the one address the load hosts connect to, \
                     not a wildcard"
                );
                let client_threads =
                    client_threads.or((!client_cpus.is_empty()).then_some(client_cpus.len()));
                Ok(Some(LoadHosts {
                    hosts,
                    load_bin: self.load_bin.clone(),
                    listen_on,
                    client_threads,
                    client_cpus,
                }))
            }
        }
    }

    /// The flags that ask a study for these hosts (what `run` passes to its network steps).
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for host in &self.load_host {
            args.extend(["--load-host".to_string(), host.clone()]);
        }
        for prefix in &self.load_cmd {
            args.extend(["--load-cmd".to_string(), prefix.clone()]);
        }
        if self.load_bin != "ringside" {
            args.extend(["--load-bin".to_string(), self.load_bin.clone()]);
        }
        if let Some(address) = self.listen_on {
            args.extend(["--listen-on".to_string(), address.to_string()]);
        }
        args
    }

    pub fn is_empty(&self) -> bool {
        self.load_host.is_empty() && self.load_cmd.is_empty()
    }
}

/// Records the interface holding `listen_on` as the one the traffic crosses, so the rungs and
/// claims that need a NIC say what its route allows them (`engines`, `claims`).
pub fn route_through(listen_on: Option<IpAddr>) -> anyhow::Result<()> {
    if let Some(address) = listen_on {
        let route = Interface::holding(address).ok_or_else(|| {
            anyhow::anyhow!("--listen-on {address}: no interface of this machine holds it")
        })?;
        set_traffic_route(route);
    }
    Ok(())
}

/// An ssh destination: never an option of ssh's own.
fn host_arg(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("a load host needs a name".into()),
        host if host.starts_with('-') || host.contains(char::is_whitespace) => Err(format!(
            "'{text}' is not a host ssh connects to (user@host, or a Host of ~/.ssh/config)"
        )),
        host => Ok(host.to_string()),
    }
}

fn prefix_arg(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("--load-cmd needs a command, e.g. 'ip netns exec NS'".into()),
        prefix => Ok(prefix.to_string()),
    }
}

/// A path or a name: not an option the remote command would read as its own.
fn bin_arg(text: &str) -> Result<String, String> {
    match text.trim() {
        bin if bin.is_empty() || bin.starts_with('-') => {
            Err(format!("'{text}' is not a path to ringside"))
        }
        bin => Ok(bin.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Option<LoadHosts>> {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            hosts: LoadHostArgs,
        }
        let command: Command = clap::Parser::try_parse_from(["ringside"].iter().chain(args))?;
        command.hosts.plan(None, vec![1])
    }

    #[test]
    fn hosts_need_an_address_to_reach_and_an_address_needs_hosts() {
        assert!(parse(&[]).unwrap().is_none());
        let error = parse(&["--load-host", "a"]).unwrap_err().to_string();
        assert!(error.contains("--listen-on"), "{error}");
        let error = parse(&["--listen-on", "198.18.0.1"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("--load-host"), "{error}");
        assert!(parse(&["--load-host", "a", "--listen-on", "0.0.0.0"]).is_err());
        assert!(parse(&[
            "--load-host",
            "-oProxyCommand=x",
            "--listen-on",
            "198.18.0.1"
        ])
        .is_err());
        let hosts = parse(&[
            "--load-host",
            "a",
            "--load-cmd",
            "ip netns exec b",
            "--listen-on",
            "198.18.0.1",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            hosts.hosts,
            [
                LoadHost::Ssh("a".into()),
                LoadHost::Prefix("ip netns exec b".into())
            ]
        );
        assert_eq!(
            (hosts.client_threads, hosts.client_cpus),
            (Some(1), vec![1])
        );
    }

    #[test]
    fn the_flags_survive_being_passed_on() {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            hosts: LoadHostArgs,
        }
        let given = [
            "--load-host",
            "a",
            "--load-cmd",
            "ip netns exec b",
            "--load-bin",
            "/opt/ringside",
            "--listen-on",
            "198.18.0.1",
        ];
        let command: Command =
            clap::Parser::try_parse_from(["ringside"].iter().chain(&given)).unwrap();
        assert_eq!(command.hosts.args(), given);
    }
}
