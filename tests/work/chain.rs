// chain.rs -- t_toolchains.sh's workload in Rust: main calls outer, which
// calls inner, the hot loop, until SECONDS (argv[1], default 0.3) have
// passed.  Builds with Debian's rustc 1.63 and rustup's alike.
use std::time::Instant;

static mut SINK: f64 = 0.0;

#[inline(never)]
fn inner(n: u64) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += i as f64 * 0.5 / (i as f64 + 1.0);
        // A volatile store each turn: the loop is not folded away.
        unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!(SINK), s) };
    }
    s
}

#[inline(never)]
fn outer(n: u64) -> f64 {
    inner(n) + 1.0
}

fn main() {
    let until: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(0.3);
    let start = Instant::now();
    let mut s = 0.0;
    while start.elapsed().as_secs_f64() < until {
        s += outer(200_000);
    }
    println!("{}", s > 0.0);
}
