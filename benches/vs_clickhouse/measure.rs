//! Running one child process and measuring it: wall time, and its own peak resident memory from
//! `wait4` (the kernel's `ru_maxrss` of exactly that child), with an optional timeout after which
//! the child is killed and the run reported as a lower bound.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Standard output larger than this is counted, not kept (a large `SELECT` prints gigabytes).
const STDOUT_KEPT: u64 = 64 << 20;

/// One finished (or killed) child.
#[derive(Debug, Clone)]
pub struct Measured {
    pub seconds: f64,
    /// Peak resident set of the child, in bytes.
    pub max_rss: u64,
    /// Standard output, when it is at most [`STDOUT_KEPT`] bytes (else empty).
    pub stdout: String,
    /// Lines and bytes of standard output (counted as it is read back, never held whole).
    pub stdout_lines: u64,
    pub stdout_bytes: u64,
    pub stderr: String,
    pub success: bool,
    /// Killed at the timeout: `seconds` is a lower bound.
    pub timed_out: bool,
}

impl Measured {
    /// Fail with the child's stderr unless it succeeded.
    pub fn check(self, what: &str) -> Result<Measured, String> {
        if self.success {
            Ok(self)
        } else if self.timed_out {
            Err(format!("{what}: timed out after {:.0} s", self.seconds))
        } else {
            Err(format!(
                "{what} failed:\n{}\n{}",
                self.stderr.trim(),
                self.stdout.trim()
            ))
        }
    }
}

/// Run `cmd` with stdout and stderr captured in files under `scratch`, and stdin from `stdin`.
pub fn run(
    cmd: &mut Command,
    stdin: Option<&Path>,
    scratch: &Path,
    timeout: Option<Duration>,
) -> Result<Measured, String> {
    let out_path = scratch.join("child.stdout");
    let err_path = scratch.join("child.stderr");
    let file = |p: &PathBuf| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    cmd.stdout(file(&out_path)?).stderr(file(&err_path)?);
    match stdin {
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
            cmd.stdin(f);
        }
        None => {
            cmd.stdin(Stdio::null());
        }
    }
    let started = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let pid = i32::try_from(child.id()).map_err(|_| "pid out of range".to_string())?;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = timeout.map(|limit| {
        std::thread::spawn(move || {
            if done_rx.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                // SAFETY: plain syscall on our own child's pid, not yet reaped (wait4 below).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return true;
            }
            false
        })
    });
    let (status, rss_kb) = wait_for(pid)?;
    let seconds = started.elapsed().as_secs_f64();
    drop(done_tx);
    let timed_out = watchdog.is_some_and(|w| w.join().unwrap_or(false));
    // Reaped by wait4 already; dropping a Child neither waits nor kills.
    drop(child);
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let (stdout_lines, stdout_bytes) = count_lines(&out_path)?;
    let stdout = if stdout_bytes <= STDOUT_KEPT {
        read(&out_path)
    } else {
        String::new()
    };
    Ok(Measured {
        seconds,
        max_rss: rss_kb.saturating_mul(1024),
        stdout,
        stdout_lines,
        stdout_bytes,
        stderr: read(&err_path),
        success: !timed_out && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        timed_out,
    })
}

/// Lines and bytes of the file at `path`, read in blocks.
fn count_lines(path: &Path) -> Result<(u64, u64), String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buffer = vec![0u8; 1 << 20];
    let (mut lines, mut bytes) = (0u64, 0u64);
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            return Ok((lines, bytes));
        }
        bytes += n as u64;
        lines += buffer[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

/// `wait4` on `pid`: its exit status and peak RSS in KiB.
fn wait_for(pid: i32) -> Result<(i32, u64), String> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; pid is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, u64::try_from(usage.ru_maxrss).unwrap_or(0)));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4: {err}"));
        }
    }
}

/// Bytes as MB (10^6), for the report.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}
