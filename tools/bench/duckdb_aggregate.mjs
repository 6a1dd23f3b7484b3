// duckdb_aggregate.mjs - the aggregation a user would write in DuckDB instead of running
// inspector-report: per communicator, operation and size, the record count, median and p95
// time and median bus bandwidth, from the JSON logs under DIR (collectives and P2P).
// Usage: node duckdb_aggregate.mjs DIR THREADS   (prints "<seconds> <groups>")
// The schema is given (no inference pass): DuckDB's fastest way to read these logs.
// Needs @duckdb/node-api (npm); tools/bench/report_vs_duckdb.sh installs it.
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, threads] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const con = await db.connect();
const t0 = process.hrtime.bigint();
const q = `
  WITH r AS (
    SELECT header.id AS comm,
           coalesce(coll_perf.coll, p2p_perf.p2p) AS op,
           coalesce(coll_perf.coll_msg_size_bytes, p2p_perf.p2p_msg_size_bytes) AS bytes,
           coalesce(coll_perf.coll_exec_time_ns, p2p_perf.p2p_exec_time_ns) AS ns,
           coalesce(coll_perf.coll_busbw_gbs, p2p_perf.p2p_busbw_gbs) AS busbw
    FROM read_json('${dir}/*.log', format = 'newline_delimited', columns = {
           header: 'STRUCT(id VARCHAR)',
           coll_perf: 'STRUCT(coll VARCHAR, coll_msg_size_bytes UBIGINT, coll_exec_time_ns UBIGINT, coll_busbw_gbs DOUBLE)',
           p2p_perf: 'STRUCT(p2p VARCHAR, p2p_msg_size_bytes UBIGINT, p2p_exec_time_ns UBIGINT, p2p_busbw_gbs DOUBLE)'})
    WHERE coll_perf IS NOT NULL OR p2p_perf IS NOT NULL)
  SELECT comm, op, bytes, count(*) AS n, median(ns) AS p50, quantile_disc(ns, 0.95) AS p95,
         median(busbw) AS bw
  FROM r GROUP BY ALL ORDER BY ALL`;
const res = await con.runAndReadAll(q);
const t1 = process.hrtime.bigint();
console.log(`${Number(t1 - t0) / 1e9} ${res.getRows().length}`);
