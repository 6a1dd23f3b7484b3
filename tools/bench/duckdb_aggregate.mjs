// duckdb_aggregate.mjs - the aggregation a user would write in DuckDB instead of running
// inspector-report: per communicator, operation, size, rank and peer (the peer of a P2P
// record, none for a collective), the record count, median and p95 time and median bus
// bandwidth, from the JSON logs under DIR (collectives and P2P). inspector-report keeps the
// same keys: its groups (communicator, operation, size) and its P2P pairs (those and rank, peer).
// Usage: node duckdb_aggregate.mjs DIR THREADS   (prints "<seconds> <groups> <CPU seconds>": the
// query's wall time, and the process's CPU time, every thread's, user and system, during it)
// Only the groups' count and sums come back to node: every aggregate is computed (the sums use
// them all), and converting millions of rows (a pair per rank and peer) to JavaScript values,
// which would be node's time, not DuckDB's, is left out.
// The schema is given (no inference pass): DuckDB's fastest way to read these logs.
// Needs @duckdb/node-api (npm); tools/bench/report_vs_duckdb.py installs it.
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, threads] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const con = await db.connect();
const t0 = process.hrtime.bigint(), cpu0 = process.cpuUsage();
const q = `
  WITH r AS (
    SELECT header.id AS comm,
           header.rank AS rank,
           p2p_perf.p2p_peer AS peer,
           coalesce(coll_perf.coll, p2p_perf.p2p) AS op,
           coalesce(coll_perf.coll_msg_size_bytes, p2p_perf.p2p_msg_size_bytes) AS bytes,
           coalesce(coll_perf.coll_exec_time_ns, p2p_perf.p2p_exec_time_ns) AS ns,
           coalesce(coll_perf.coll_busbw_gbs, p2p_perf.p2p_busbw_gbs) AS busbw
    FROM read_json('${dir}/*.log', format = 'newline_delimited', columns = {
           header: 'STRUCT(id VARCHAR, rank INTEGER)',
           coll_perf: 'STRUCT(coll VARCHAR, coll_msg_size_bytes UBIGINT, coll_exec_time_ns UBIGINT, coll_busbw_gbs DOUBLE)',
           p2p_perf: 'STRUCT(p2p VARCHAR, p2p_peer INTEGER, p2p_msg_size_bytes UBIGINT, p2p_exec_time_ns UBIGINT, p2p_busbw_gbs DOUBLE)'})
    WHERE coll_perf IS NOT NULL OR p2p_perf IS NOT NULL)
  , g AS (
    SELECT comm, op, bytes, rank, peer, count(*) AS n, median(ns) AS p50, quantile_disc(ns, 0.95) AS p95,
           median(busbw) AS bw
    FROM r GROUP BY ALL)
  SELECT count(*), sum(n), sum(p50), sum(p95), sum(bw) FROM g`;
const res = await con.runAndReadAll(q);
const t1 = process.hrtime.bigint(), cpu = process.cpuUsage(cpu0);
console.log(`${Number(t1 - t0) / 1e9} ${res.getRows()[0][0]} ${(cpu.user + cpu.system) / 1e6}`);
