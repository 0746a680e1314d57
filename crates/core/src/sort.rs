//! One stable sort for the core's lists (diagnostics, memory terms, overheads, the search's micro-batch sizes, the
//! sizing's node counts, the diff's chunks, the schedule's events; not the search's ranking, whose comparison is its hot
//! path, nor the codes index: `codes` imports nothing). `slice::sort_by` and `sort_unstable_by` are generic over
//! the element and the comparison, so each call site compiled its own copy of the standard library's driftsort or
//! quicksort (eight copies, about 22 KB of the page's wasm before gzip, docs/web.md "What went"); here the sort runs
//! once, over an index array with a `dyn` comparison, and only the cheap reordering is per element type. Same order as
//! `sort_by`: stable, equal elements keep their order (so the same order as an unstable sort wherever equal elements
//! are indistinguishable or the comparison is a total order without ties).

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably (as `slice::sort_by`).
pub fn stable_by<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let mut order: Vec<usize> = (0..v.len()).collect();
    sort_indices(&mut order, &|a, b| cmp(&v[a], &v[b]));
    // Position i takes the element that was at order[i]. Swaps place one element per step; an element already
    // swapped away from a position before i is found by following `order` from that position (each swap at k sent
    // what was at k to the position the chain from order[k] reached), so the walk ends at the element's place ≥ i.
    for i in 0..order.len() {
        let mut j = order[i];
        while j < i {
            j = order[j];
        }
        v.swap(i, j);
    }
}

/// Sorts `v` by a key, stably (as `slice::sort_by_key`).
pub fn stable_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    stable_by(v, |a, b| key(a).cmp(&key(b)));
}

/// The one instance of the standard library's stable sort: indices, compared through `cmp`.
#[inline(never)]
fn sort_indices(order: &mut [usize], cmp: &dyn Fn(usize, usize) -> Ordering) {
    order.sort_by(|&a, &b| cmp(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_like_the_standard_library() {
        // Pairs (key, arrival): equal keys must keep their arrival order, as `sort_by_key` keeps them.
        let mut v = vec![(3, 0), (1, 1), (3, 2), (2, 3), (1, 4), (3, 5), (0, 6)];
        stable_by_key(&mut v, |p| p.0);
        assert_eq!(v, vec![(0, 6), (1, 1), (1, 4), (2, 3), (3, 0), (3, 2), (3, 5)]);
        // Descending by key, ties in arrival order.
        stable_by(&mut v, |a, b| b.0.cmp(&a.0));
        assert_eq!(v, vec![(3, 0), (3, 2), (3, 5), (2, 3), (1, 1), (1, 4), (0, 6)]);
    }

    proptest::proptest! {
        /// Any list, any number of ties: the same order as the standard library's stable sort.
        #[test]
        fn agrees_with_sort_by_on_any_list(keys in proptest::collection::vec(0u8..8, 0..300)) {
            let mut a: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut b = a.clone();
            stable_by(&mut a, |x, y| y.0.cmp(&x.0));
            b.sort_by(|x, y| y.0.cmp(&x.0));
            proptest::prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn agrees_with_sort_by_on_longer_lists() {
        // 200 elements with many ties (key = i * 7 mod 13), sorted by both; 200 > the small-sort threshold.
        let mut a: Vec<(u32, usize)> = (0..200).map(|i| ((i * 7 % 13) as u32, i)).collect();
        let mut b = a.clone();
        stable_by(&mut a, |x, y| x.0.cmp(&y.0));
        b.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(a, b);
        // A fixed-size array, as `perf`'s terms are sorted, and a reversal of 64 distinct keys (one long cycle).
        let mut arr = [5u8, 1, 4, 1, 3];
        stable_by(&mut arr, |x, y| y.cmp(x));
        assert_eq!(arr, [5, 4, 3, 1, 1]);
        let mut rev: Vec<u32> = (0..64).rev().collect();
        stable_by(&mut rev, |x, y| x.cmp(y));
        assert_eq!(rev, (0..64).collect::<Vec<u32>>());
        let mut empty: Vec<u8> = Vec::new();
        stable_by_key(&mut empty, |x| *x);
        assert!(empty.is_empty());
    }
}
