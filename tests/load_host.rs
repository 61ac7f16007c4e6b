//! Studies whose load runs on other hosts (`--load-host`, `--load-cmd`), tried for real: each
//! load host is a network namespace joined to this machine by a veth pair on 198.19.0.0/16
//! (part of 198.18.0.0/15; a namespace's only routes are its pair's /30 and, for the second
//! host, this machine's address on the first pair, where the servers listen), running Debian's
//! sshd inside it
//! with a key made for the test. ssh is reached through a wrapper on PATH that adds the test's
//! own client config (`ssh -F`), as a user's ~/.ssh/config would. The servers run here on
//! CPU 0, the loads in the namespaces pinned to CPU 1.
//!
//! These tests need root (namespaces) and openssh-server (`.ci/run` installs it); the clock
//! test needs faketime. Each skips, saying why, without them. The test tears down its sshd and
//! namespaces however it ends.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::BIN;
use serde_json::Value;

/// The tests share the machine's two CPUs and sshd's port in their namespaces' addresses:
/// one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SSHD: &str = "/usr/sbin/sshd";
/// A short window after a short warm-up: the tests check behaviour, not speed.
const WINDOW: [&str; 4] = ["--duration", "400ms", "--warmup", "200ms"];

/// Why a test cannot run here, if it cannot.
fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("load hosts in network namespaces need root".into());
    }
    if !Path::new(SSHD).exists() {
        return Some(format!("{SSHD} is missing: apt-get install openssh-server"));
    }
    None
}

/// One load host: a namespace, its veth pair to this machine, its sshd.
struct Host {
    namespace: String,
    /// This machine's end of the pair, and the namespace's.
    here: String,
    there: String,
    sshd: Option<Child>,
}

/// The load hosts of one test and the files they need, removed when dropped.
struct Lab {
    dir: tempfile::TempDir,
    hosts: Vec<Host>,
}

impl Lab {
    /// `count` load hosts, each with an sshd that takes the test's key.
    fn create(test: u8, count: usize) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let mut lab = Lab {
            dir,
            hosts: Vec::new(),
        };
        let keygen = |name: &str| {
            let key = lab.dir.path().join(name);
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(&key));
            key
        };
        let user_key = keygen("user_key");
        let host_key = keygen("host_key");
        let public = |key: &Path| std::fs::read_to_string(key.with_extension("pub")).unwrap();
        let dir = lab.dir.path().to_path_buf();
        std::fs::write(dir.join("authorized_keys"), public(&user_key)).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let pid = std::process::id();
        let mut client_config = String::new();
        let mut known_hosts = String::new();
        for index in 0..count {
            let namespace = format!("rs-lh-{pid}-{test}-{index}");
            let tag = format!("{}{test}{index}", pid % 100_000);
            let (here, there) = (format!("rlh{tag}a"), format!("rlh{tag}b"));
            let (near, far) = lab.addresses(test, index);
            run(Command::new("ip").args(["netns", "add", &namespace]));
            lab.hosts.push(Host {
                namespace: namespace.clone(),
                here: here.clone(),
                there: there.clone(),
                sshd: None,
            });
            ip(&[
                "link", "add", &here, "type", "veth", "peer", "name", &there, "netns", &namespace,
            ]);
            ip(&["addr", "add", &format!("{near}/30"), "dev", &here]);
            ip(&["link", "set", &here, "up"]);
            ip(&[
                "-n",
                &namespace,
                "addr",
                "add",
                &format!("{far}/30"),
                "dev",
                &there,
            ]);
            ip(&["-n", &namespace, "link", "set", &there, "up"]);
            ip(&["-n", &namespace, "link", "set", "lo", "up"]);
            // The servers listen on the first host's pair (`--listen-on`): the others reach
            // this machine's address there through their own pair, and nothing else.
            let (listen_on, _) = lab.addresses(test, 0);
            if index > 0 {
                let to = format!("{listen_on}/32");
                ip(&["-n", &namespace, "route", "add", &to, "via", &near]);
            }
            let config = dir.join(format!("sshd_config_{index}"));
            std::fs::write(
                &config,
                format!(
                    "ListenAddress {far}:22\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
                     PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\n",
                    host_key.display(),
                    dir.join("authorized_keys").display(),
                    dir.join(format!("sshd_{index}.pid")).display()
                ),
            )
            .unwrap();
            let sshd = Command::new("ip")
                .args(["netns", "exec", &namespace, SSHD, "-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            lab.hosts[index].sshd = Some(sshd);
            client_config.push_str(&format!(
                "Host {namespace}\n  HostName {far}\n  User root\n  IdentityFile {}\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n\
                 Host {namespace}-closed\n  HostName {far}\n  Port 2222\n  User root\n  \
                 IdentityFile {}\n  UserKnownHostsFile {}\n",
                user_key.display(),
                dir.join("known_hosts").display(),
                user_key.display(),
                dir.join("known_hosts").display(),
            ));
            known_hosts.push_str(&format!("{far} {}", public(&host_key)));
        }
        std::fs::write(dir.join("ssh_config"), client_config).unwrap();
        std::fs::write(dir.join("known_hosts"), known_hosts).unwrap();
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let wrapper = bin.join("ssh");
        let mut file = std::fs::File::create(&wrapper).unwrap();
        writeln!(
            file,
            "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"",
            dir.join("ssh_config").display()
        )
        .unwrap();
        drop(file);
        run(Command::new("chmod").arg("+x").arg(&wrapper));
        for index in 0..count {
            lab.wait_for_sshd(index);
        }
        lab
    }

    /// This machine's address on host `index`'s pair, and the host's: a /30 of 198.19.0.0/16
    /// per test and host.
    fn addresses(&self, test: u8, index: usize) -> (String, String) {
        let third = 16 + 8 * usize::from(test) + index;
        (format!("198.19.{third}.1"), format!("198.19.{third}.2"))
    }

    fn wait_for_sshd(&self, index: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let answered = self
                .ssh()
                .args(["-o", "BatchMode=yes", &self.hosts[index].namespace, "true"])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            if answered.success() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("sshd in {} did not answer", self.hosts[index].namespace);
    }

    fn ssh(&self) -> Command {
        let mut command = Command::new("/usr/bin/ssh");
        command.arg("-F").arg(self.dir.path().join("ssh_config"));
        command
    }

    /// A study command with the test's ssh on PATH.
    fn ringside(&self) -> Command {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut command = Command::new(BIN);
        command.env(
            "PATH",
            format!("{}:{path}", self.dir.path().join("bin").display()),
        );
        command
    }

    /// The ringside loads (and load host checks) in host `index`'s namespace.
    fn ringside_processes(&self, index: usize) -> Vec<(u32, String)> {
        let output = Command::new("ip")
            .args(["netns", "pids", &self.hosts[index].namespace])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .filter_map(|pid| {
                let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let line = String::from_utf8_lossy(&line).replace('\0', " ");
                (line.contains(BIN) && line.contains(" load "))
                    .then(|| (pid.parse().unwrap(), line))
            })
            .collect()
    }

    fn output_file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for host in &mut self.hosts {
            if let Some(mut sshd) = host.sshd.take() {
                let _ = sshd.kill();
                let _ = sshd.wait();
            }
            // What is left in a namespace this test made (sshd's sessions) goes with it.
            if let Ok(output) = Command::new("ip")
                .args(["netns", "pids", &host.namespace])
                .output()
            {
                for pid in String::from_utf8_lossy(&output.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            let _ = Command::new("ip")
                .args(["link", "del", &host.here])
                .status();
            let _ = Command::new("ip")
                .args(["netns", "del", &host.namespace])
                .status();
            let _ = &host.there;
        }
    }
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

fn run(command: &mut Command) {
    let status = command.status().unwrap();
    assert!(status.success(), "{command:?}");
}

fn document(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The latency histogram of a row, decoded.
fn histogram(row: &Value) -> hdrhistogram::Histogram<u64> {
    let text = row["latency_ns_histogram"].as_str().expect("a histogram");
    ringside::stats::histogram::decode(text).unwrap()
}

/// Runs a study, a bound on its time.
fn study(mut command: Command) -> Output {
    command.stdin(Stdio::null());
    let output = command.output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Goal: a study whose load runs on a host reached over ssh measures what a local study does,
/// from both sides. Method: epoll and uring-defer, two rounds, 8 connections, the load over
/// ssh in the namespace pinned to CPU 1; every row verified, the server's syscalls counted
/// here, the host's part recorded (its machine, NIC, clock, CPU share), the rows' operations
/// the host's and the histogram's count equal to them; then HTTP the same way.
#[test]
fn a_study_through_an_ssh_load_host_measures_the_servers_here() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(reason) = missing() {
        eprintln!("skipped: {reason}");
        return;
    }
    let lab = Lab::create(1, 1);
    let (near, _) = lab.addresses(1, 0);
    let host = lab.hosts[0].namespace.clone();
    let out = lab.output_file("echo.json");
    let mut command = lab.ringside();
    command
        .args(["echo", "-e", "epoll,uring-defer", "-c", "8", "--runs", "2"])
        .args(WINDOW)
        .args(["--server-cpu", "0", "--client-cpu", "1"])
        .args([
            "--load-host",
            &host,
            "--load-bin",
            BIN,
            "--listen-on",
            &near,
        ])
        .args(["--format", "json", "-o"])
        .arg(&out);
    let output = study(command);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("load host {host}: ")), "{stderr}");
    let rows = document(&out)["results"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 4, "two engines, two rounds");
    for row in &rows {
        assert_eq!(row["verified"], true, "{row}");
        assert_eq!(row["syscalls_source"], "kernel", "the server counted here");
        let params = &row["params"];
        assert_eq!(params["network"], "hosts");
        assert_eq!(params["load_hosts"], host.as_str());
        assert_eq!(params["listen_on"], near.as_str());
        assert_eq!(
            (&params["connections"], &params["client_cpus"]),
            (&8.into(), &"1".into())
        );
        assert!(row["order_seed"].is_u64());
        assert!(row["server_nic"]
            .as_str()
            .unwrap()
            .contains("virtual, no NIC"));
        let part = &row["load_hosts"][0];
        assert_eq!(part["host"], host.as_str());
        assert!(
            part["machine"].as_str().unwrap().contains("Linux"),
            "{part}"
        );
        assert!(part["nic"]
            .as_str()
            .unwrap()
            .starts_with(&lab.hosts[0].there));
        assert!(part["clock_offset_s"].as_f64().unwrap().abs() < 0.008);
        assert_eq!(part["ops"], row["ops"]);
        assert_eq!(part["latency_ns_count"], row["ops"]);
        assert_eq!(histogram(row).len(), row["ops"].as_u64().unwrap());
        let busy = part["client_busy_share"].as_f64().unwrap();
        assert!(busy > 0.0 && busy <= 1.5, "{busy}");
        assert!(row["server_cpu_utilisation"].as_f64().unwrap() > 0.0);
    }
    let out = lab.output_file("http.json");
    let mut command = lab.ringside();
    command
        .args(["http", "-e", "epoll", "-c", "8", "--runs", "1"])
        .args(WINDOW)
        .args(["--server-cpu", "0", "--client-cpu", "1"])
        .args([
            "--load-host",
            &host,
            "--load-bin",
            BIN,
            "--listen-on",
            &near,
        ])
        .args(["--format", "json", "-o"])
        .arg(&out);
    assert!(study(command).status.success());
    let row = &document(&out)["results"][0];
    assert_eq!(
        (&row["verified"], &row["workload"]),
        (&true.into(), &"http".into())
    );
    assert!(row["status_counts"]["200"].as_u64().unwrap() > 0);
    assert!(lab.ringside_processes(0).is_empty());
}

/// Goal: loads on two hosts, one over ssh and one through `ip netns exec`, merge into one row
/// per run that is their sum. Method: 9 connections over two namespaces (5 and 4); each row's
/// operations are the hosts' sum, its histogram's count the sum of theirs and its maximum the
/// larger of theirs, its client CPU the busiest host's.
#[test]
fn loads_on_two_hosts_merge_into_one_row_per_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(reason) = missing() {
        eprintln!("skipped: {reason}");
        return;
    }
    let lab = Lab::create(2, 2);
    let (near, _) = lab.addresses(2, 0);
    let (a, b) = (&lab.hosts[0].namespace, &lab.hosts[1].namespace);
    let prefix = format!("ip netns exec {b}");
    let out = lab.output_file("two.json");
    let mut command = lab.ringside();
    command
        .args(["echo", "-e", "epoll", "-c", "9", "--runs", "2"])
        .args(WINDOW)
        .args(["--server-cpu", "0", "--client-cpu", "1"])
        .args(["--load-host", a, "--load-cmd", &prefix, "--load-bin", BIN])
        .args(["--listen-on", &near, "--format", "json", "-o"])
        .arg(&out);
    assert!(study(command).status.success());
    let rows = document(&out)["results"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["verified"], true, "{row}");
        assert_eq!(row["params"]["hosts"], 2);
        assert_eq!(row["params"]["connections"], 9);
        let parts = row["load_hosts"].as_array().unwrap();
        let names: Vec<&str> = parts.iter().map(|p| p["host"].as_str().unwrap()).collect();
        assert_eq!(names, [a.as_str(), prefix.as_str()]);
        let connections: Vec<u64> = parts
            .iter()
            .map(|p| p["connections"].as_u64().unwrap())
            .collect();
        assert_eq!(connections, [4, 5]);
        let sum = |key: &str| parts.iter().map(|p| p[key].as_u64().unwrap()).sum::<u64>();
        assert_eq!(row["ops"].as_u64().unwrap(), sum("ops"));
        let merged = histogram(row);
        assert_eq!(merged.len(), sum("latency_ns_count"));
        let most = parts
            .iter()
            .map(|p| p["latency_ns_max"].as_u64().unwrap())
            .max();
        assert_eq!(Some(merged.max()), most);
        assert_eq!(row["latency_ns_max"].as_u64(), most);
        let busiest = parts
            .iter()
            .max_by(|x, y| {
                let share = |p: &Value| p["client_busy_share"].as_f64().unwrap();
                share(x).total_cmp(&share(y))
            })
            .unwrap();
        assert_eq!(row["client_cpu_user_s"], busiest["client_cpu_user_s"]);
    }
    assert!(lab.ringside_processes(0).is_empty() && lab.ringside_processes(1).is_empty());
}

/// Goal: a load host that dies mid-run fails that run, not the study, and leaves nothing
/// running. Method: three rounds of one engine with loads on two hosts; the first remote load
/// seen in host 0's namespace is killed (SIGKILL) 300 ms into its life; its run is a failure row
/// naming the host, the other runs are measured, the study exits 4 (an engine's run failed),
/// and no ringside is left in either namespace.
#[test]
fn a_load_host_killed_mid_run_fails_that_run_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(reason) = missing() {
        eprintln!("skipped: {reason}");
        return;
    }
    let lab = Lab::create(3, 2);
    let (near, _) = lab.addresses(3, 0);
    let (a, b) = (&lab.hosts[0].namespace, &lab.hosts[1].namespace);
    let out = lab.output_file("killed.json");
    let mut command = lab.ringside();
    command
        .args(["echo", "-e", "epoll", "-c", "4", "--runs", "3"])
        .args(WINDOW)
        .args(["--server-cpu", "0", "--client-cpu", "1"])
        .args(["--load-host", a, "--load-host", b, "--load-bin", BIN])
        .args(["--listen-on", &near, "--format", "json", "-o"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let killed = loop {
        let mut loads = lab.ringside_processes(0).into_iter();
        if let Some((pid, _)) = loads.find(|(_, line)| line.contains(" load echo ")) {
            std::thread::sleep(Duration::from_millis(300));
            run(Command::new("kill").args(["-KILL", &pid.to_string()]));
            break pid;
        }
        assert!(Instant::now() < deadline, "no load started in {a}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("killed {killed}\n{stderr}");
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    let rows = document(&out)["results"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 3);
    let failed: Vec<&Value> = rows.iter().filter(|r| r["failure"].is_string()).collect();
    assert_eq!(failed.len(), 1, "{rows:?}");
    let reason = failed[0]["failure"].as_str().unwrap();
    assert!(reason.contains(&format!("load host {a}")), "{reason}");
    assert!(reason.contains("during the run"), "{reason}");
    assert_eq!(failed[0]["params"]["load_hosts"], format!("{a},{b}"));
    assert!(rows.iter().filter(|r| r["verified"] == true).count() == 2);
    for index in 0..2 {
        assert_eq!(lab.ringside_processes(index), Vec::new());
    }
}

/// Goal: each thing a load host can lack is one sentence naming the host, before anything is
/// measured. Method: a host whose sshd does not listen (its port 2222), a host without ringside
/// (`--load-bin` elsewhere), a ringside of another result schema (a script that answers so), and
/// a host whose clock is 5 s ahead (faketime in `--load-cmd`): each exits 1 with one line on
/// stderr naming the host, and writes no results.
#[test]
fn a_host_that_cannot_load_is_one_sentence_before_anything_is_measured() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(reason) = missing() {
        eprintln!("skipped: {reason}");
        return;
    }
    let lab = Lab::create(4, 1);
    let (near, _) = lab.addresses(4, 0);
    let host = lab.hosts[0].namespace.clone();
    let other_schema = lab.output_file("other-ringside");
    std::fs::write(
        &other_schema,
        "#!/bin/sh\necho '{\"schema_version\":99,\"ringside_version\":\"9.0.0\",\"machine\":\"m\",\
         \"cpus_online\":1,\"kernel_release\":\"k\",\"nic\":\"n\"}'\n",
    )
    .unwrap();
    run(Command::new("chmod").arg("+x").arg(&other_schema));
    let other = other_schema.to_string_lossy().to_string();
    let closed = format!("{host}-closed");
    let netns = format!("ip netns exec {host}");
    let mut cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--load-host", &closed, "--load-bin", BIN],
            format!("load host {closed} does not answer over ssh"),
        ),
        (
            vec!["--load-host", &host, "--load-bin", "/nonexistent/ringside"],
            format!("load host {host} could not run /nonexistent/ringside"),
        ),
        (
            vec!["--load-cmd", &netns, "--load-bin", &other],
            format!("load host '{netns}' runs ringside 9.0.0, which writes result schema 99"),
        ),
    ];
    let faked = format!("ip netns exec {host} faketime -f +5s");
    match Path::new("/usr/bin/faketime").exists() {
        true => cases.push((
            vec!["--load-cmd", &faked, "--load-bin", BIN],
            format!("the clock of load host '{faked}' is 5.0"),
        )),
        false => {
            eprintln!("the clock case skipped: faketime is missing (apt-get install faketime)")
        }
    }
    for (flags, sentence) in cases {
        let out = lab.output_file("never.json");
        let mut command = lab.ringside();
        command
            .args(["echo", "-e", "epoll", "-c", "2", "--runs", "1"])
            .args(WINDOW)
            .args(flags)
            .args(["--listen-on", &near, "-o"])
            .arg(&out);
        let output = study(command);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&sentence), "{sentence:?} not in {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
        assert!(!out.exists(), "nothing measured, nothing written");
    }
    assert!(lab.ringside_processes(0).is_empty());
}

/// Goal: the rungs and claims that need a NIC say what the route to `--listen-on` allows them,
/// from the route alone (nothing is sent). Method: `engines` and `claims list` with the
/// loopback address say its interface has no NIC queue; with the address of an interface that
/// has a driver (a NIC), when this machine has one, the NIC claim runs with load hosts and the
/// NIC rungs say their servers are not built yet.
#[test]
fn the_route_to_listen_on_decides_what_the_nic_rungs_and_claims_may_do() {
    let listing = |address: &str| -> (String, String) {
        let engines = Command::new(BIN)
            .args(["engines", "--format", "json", "--listen-on", address])
            .output()
            .unwrap();
        assert!(engines.status.success());
        let rows: Value = serde_json::from_slice(&engines.stdout).unwrap();
        let napi = (rows.as_array().unwrap().iter())
            .find(|row| row["engine"] == "uring-napi")
            .map(|row| row["reason"].as_str().unwrap().to_string())
            .unwrap();
        let claims = Command::new(BIN)
            .args(["claims", "list", "--listen-on", address])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&claims.stdout).to_string();
        let claim = text
            .split("\n")
            .skip_while(|line| !line.starts_with("echo-send-zc-nic "))
            .nth(2)
            .unwrap()
            .to_string();
        (napi, claim)
    };
    let (napi, claim) = listing("127.0.0.1");
    assert!(
        napi.contains("crosses lo (loopback), which has none"),
        "{napi}"
    );
    assert!(
        claim.contains("cannot test here") && claim.contains("lo (loopback)"),
        "{claim}"
    );
    let output = Command::new("ip")
        .args(["-4", "-o", "addr"])
        .output()
        .unwrap();
    let nic = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (name, address) = (words.get(1)?, words.get(3)?.split('/').next()?);
            let device = Path::new("/sys/class/net").join(name).join("device");
            device
                .exists()
                .then(|| (name.to_string(), address.to_string()))
        })
        .next();
    let Some((name, address)) = nic else {
        eprintln!("the NIC case skipped: no interface with a driver holds an IPv4 address");
        return;
    };
    let (napi, claim) = listing(&address);
    assert!(napi.contains(&format!("crosses {name} (")), "{napi}");
    assert!(napi.contains("not built yet"), "{napi}");
    assert!(
        claim.starts_with("    runs here with its load on other hosts"),
        "{claim}"
    );
}
