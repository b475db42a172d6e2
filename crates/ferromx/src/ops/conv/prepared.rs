//! Transformed filters kept across calls of an inference plan.
//!
//! Why: a Winograd convolution transforms its filter (`G g Gᵀ`, 16 or 36
//! values per kernel) on every call. In a hybridized block's inference plan
//! (`_fused_convolution`, `symbol/_fuse.py`) the weights are parameters that
//! do not change from one call to the next, so the transform is done once and
//! kept while the weight's chunk has seen no new write (MXNet's oneDNN backend
//! likewise keeps reordered weights for inference). That also makes F(4×4)
//! affordable for layers whose transformed filter is too large to rebuild per
//! call (512 × 512 channels: 36 MB): on ResNet-18's 4×4 planes it multiplies
//! 36 values per tile where F(2×2) multiplies 64.
//!
//! An entry is keyed by the weight's identity ([`Written`]: chunk, place,
//! write events), the transform and the layer's channels. A write to the
//! weight (an optimizer step, `set_data`, a load) changes the identity, so the
//! next call transforms again and replaces the entry; entries whose chunk is
//! gone are dropped. The cache holds at most [`cap_bytes`] (least recently used
//! entries go first); `FERROMX_CONV_FILTER_CACHE_MB=0` turns it off.

use super::cpu::ConvElem;
use super::epilogue::Epilogue;
use super::{winograd, winograd4, Geom};
use crate::storage::{Scratch, Written};
use parking_lot::Mutex;
use std::any::Any;
use std::sync::Arc;

/// Which transform an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transform {
    /// F(2×2, 3×3): 16 positions.
    F2,
    /// F(4×4, 3×3): 36 positions.
    F4,
}

struct Entry {
    weight: Written,
    transform: Transform,
    o: usize,
    c: usize,
    elem: std::any::TypeId,
    bytes: usize,
    used: u64,
    data: Arc<dyn Any + Send + Sync>,
}

impl Entry {
    /// Whether this entry holds `transform` of `weight` for `o × c` channels of `elem`.
    fn holds(&self, weight: &Written, transform: Transform, o: usize, c: usize, elem: std::any::TypeId) -> bool {
        self.weight.same(weight) && self.transform == transform && (self.o, self.c) == (o, c) && self.elem == elem
    }
}

#[derive(Default)]
struct Cache {
    entries: Vec<Entry>,
    tick: u64,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { entries: Vec::new(), tick: 0 });

/// The cache's capacity in bytes: `FERROMX_CONV_FILTER_CACHE_MB` (default 256).
fn cap_bytes() -> usize {
    static CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        let mb = std::env::var("FERROMX_CONV_FILTER_CACHE_MB").ok().and_then(|v| v.trim().parse::<usize>().ok());
        mb.unwrap_or(256) << 20
    })
}

/// The largest transformed F(4×4) filter kept (a 512 × 512 layer's is 36 MB).
const F4_MAX_CACHED_BYTES: usize = 64 << 20;

/// `out = conv(x, w) [+ bias]`, then `epi`, with `w`'s Winograd transform taken
/// from the cache when `weight` identifies it; returns `false` (nothing
/// written) when `g` is not a Winograd layer or nothing can be cached.
pub(crate) fn forward<T: ConvElem>(
    g: &Geom,
    x: &[T],
    w: &[T],
    weight: Option<Written>,
    bias: Option<&[T]>,
    epi: &Epilogue<'_, T>,
    out: &mut [T],
) -> bool {
    let Some(weight) = weight else { return false };
    if cap_bytes() == 0 || !winograd::applies(g) {
        return false;
    }
    let f4_bytes = 36 * g.o * g.c * std::mem::size_of::<T>();
    let transform =
        if winograd::f4() && f4_bytes <= F4_MAX_CACHED_BYTES.min(cap_bytes()) { Transform::F4 } else { Transform::F2 };
    let u = lookup::<T>(weight, transform, g.o, g.c, || match transform {
        Transform::F4 => winograd4::filter(w, g.o, g.c, false),
        Transform::F2 => winograd::filter(w, g.o, g.c, false),
    });
    match transform {
        Transform::F4 => winograd4::run(g, x, &u, bias, epi, out),
        Transform::F2 => winograd::run(g, x, &u, bias, epi, out),
    }
    true
}

/// The cached transform of `weight`, made by `make` (outside the lock) when
/// missing or stale.
fn lookup<T: ConvElem>(
    weight: Written,
    transform: Transform,
    o: usize,
    c: usize,
    make: impl FnOnce() -> Scratch<T>,
) -> Arc<Scratch<T>> {
    let elem = std::any::TypeId::of::<T>();
    {
        let mut cache = CACHE.lock();
        cache.tick += 1;
        let tick = cache.tick;
        let hit = cache.entries.iter_mut().find(|e| e.holds(&weight, transform, o, c, elem));
        if let Some(e) = hit {
            e.used = tick;
            if let Ok(u) = Arc::clone(&e.data).downcast::<Scratch<T>>() {
                return u;
            }
        }
    }
    let u = Arc::new(make());
    let bytes = u.len() * std::mem::size_of::<T>();
    let mut cache = CACHE.lock();
    // A write to the weight makes its old entries useless; so does its chunk's end.
    cache.entries.retain(|e| e.weight.alive() && !(e.weight.var == weight.var && e.weight.writes != weight.writes));
    // Another worker may have made the same transform meanwhile.
    let made = cache.entries.iter().find(|e| e.holds(&weight, transform, o, c, elem));
    if let Some(Ok(other)) = made.map(|e| Arc::clone(&e.data).downcast::<Scratch<T>>()) {
        return other;
    }
    let cap = cap_bytes();
    if bytes <= cap {
        while cache.entries.iter().map(|e| e.bytes).sum::<usize>() + bytes > cap {
            let Some((oldest, _)) = cache.entries.iter().enumerate().min_by_key(|(_, e)| e.used) else { break };
            cache.entries.swap_remove(oldest);
        }
        cache.tick += 1;
        let used = cache.tick;
        let data: Arc<dyn Any + Send + Sync> = u.clone();
        cache.entries.push(Entry { weight, transform, o, c, elem, bytes, used, data });
    }
    u
}

/// Bytes the cache holds (for tests).
#[cfg(test)]
pub(crate) fn cached_bytes() -> usize {
    CACHE.lock().entries.iter().map(|e| e.bytes).sum()
}
