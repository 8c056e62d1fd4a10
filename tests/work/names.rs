// names.rs -- a Rust workload whose hot functions have qualified names:
// a method of a struct in nested modules, a trait method implemented for
// it, a generic function, a closure, and the standard library's small
// functions inlined into them (u64::wrapping_mul, Vec's indexing).
// t_names.sh builds it with rustc -O -g, with legacy and with v0 symbol
// mangling, and profiles it; every frame's name must be what `addr2line
// -C -f -i` says.  Usage: names_rs [ROUNDS]
pub mod hot {
    pub mod engine {
        pub struct Mixer {
            pub state: u64,
            pub table: Vec<u64>,
        }

        pub trait Step {
            fn step(&mut self, x: u64) -> u64;
        }

        #[inline(always)]
        fn mix(x: u64) -> u64 {
            let x = (x ^ (x >> 33)).wrapping_mul(0xff51afd7ed558ccd);
            x ^ (x >> 29)
        }

        impl Mixer {
            pub fn new(n: usize) -> Mixer {
                Mixer { state: 1, table: (0..n as u64).map(mix).collect() }
            }

            #[inline(never)]
            pub fn churn(&mut self, n: u64) -> u64 {
                for i in 0..n {
                    let k = (self.state as usize) & (self.table.len() - 1);
                    self.state = mix(self.state.wrapping_add(self.table[k]) ^ i);
                }
                self.state
            }
        }

        impl Step for Mixer {
            #[inline(never)]
            fn step(&mut self, x: u64) -> u64 {
                let mut y = x;
                for _ in 0..64 {
                    y = mix(y.rotate_left(7).wrapping_add(self.state));
                }
                self.state ^= y;
                y
            }
        }
    }
}

#[inline(never)]
fn fold<F: FnMut(u64) -> u64>(n: u64, mut f: F) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(f(i));
    }
    acc
}

fn main() {
    use hot::engine::{Mixer, Step};
    let rounds: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut m = Mixer::new(1024);
    let mut sink = 0u64;
    for r in 0..rounds {
        sink = sink.wrapping_add(m.churn(20_000_000 + rounds));
        sink = sink.wrapping_add(fold(300_000 + rounds, |i| m.step(i ^ r)));
    }
    println!("names done {}", sink & 1);
}
