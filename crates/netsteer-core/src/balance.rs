//! Port balancing for min-hop tables: each destination whose min-hop set has several
//! ports takes the member its switch has used least so far (OpenSM's minhop counters).
//!
//! A row's choices depend on every earlier destination of that row, so a row is a
//! sequential walk; rows are independent. Python (`netsteer.routing.minhop`) keeps a
//! vectorised path for rows whose groups do not interact and sends the others here.

/// Replace each group entry (`-2 - g`) of the given `rows` of `table` (row-major,
/// `width` destinations per row) by the member of group `g`
/// (`ports[start[g]..start[g + 1]]`, in order) with the lowest counter, the first
/// such member on ties; then count the port chosen. Single ports (`>= 0`) are
/// counted as they come; `-1` (no route) is left alone. Counters are per row and
/// cover ports `0..n_slots`.
///
/// Returns an error, having changed nothing, if a row, group or port is out of range.
///
/// ```
/// use netsteer_core::balance::least_used_rows;
/// // one row, four destinations: group 0 = {1, 2}; port 3 once
/// let mut t = vec![-2, 3, -2, -2];
/// least_used_rows(&mut t, 4, &[0], &[0, 2], &[1, 2], 4).unwrap();
/// assert_eq!(t, vec![1, 3, 2, 1]);
/// ```
pub fn least_used_rows(
    table: &mut [i32],
    width: usize,
    rows: &[usize],
    start: &[usize],
    ports: &[i32],
    n_slots: usize,
) -> Result<(), String> {
    let groups = start.len().saturating_sub(1);
    if start.windows(2).any(|w| w[0] >= w[1]) || start.last().is_some_and(|&e| e > ports.len()) {
        return Err(
            "group starts are not a strictly increasing index into the ports (a group is empty)"
                .into(),
        );
    }
    if ports.iter().any(|&p| p < 0 || p as usize >= n_slots) {
        return Err(format!("a group port is outside 0..{n_slots}"));
    }
    if rows.iter().any(|&r| (r + 1) * width > table.len()) {
        return Err("a row is outside the table".into());
    }
    let bad = |e: i32| {
        (e >= 0 && e as usize >= n_slots) || (e <= -2 && (-2 - e as i64) as usize >= groups)
    };
    if rows
        .iter()
        .any(|&r| table[r * width..(r + 1) * width].iter().any(|&e| bad(e)))
    {
        return Err("an entry names a port or group that does not exist".into());
    }
    let mut counts = vec![0u64; n_slots];
    for &r in rows {
        counts.iter_mut().for_each(|c| *c = 0);
        for e in &mut table[r * width..(r + 1) * width] {
            if *e <= -2 {
                let g = (-2 - *e) as usize;
                let members = &ports[start[g]..start[g + 1]];
                let mut best = members[0];
                for &p in &members[1..] {
                    if counts[p as usize] < counts[best as usize] {
                        best = p;
                    }
                }
                *e = best;
            }
            if *e >= 0 {
                counts[*e as usize] += 1;
            }
        }
    }
    Ok(())
}
