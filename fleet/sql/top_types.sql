-- `lineup fleet top`, types: cost summed per build, unit and type (from host_rows, the store
-- summed per host by top_hosts.sql), ranked by the profile model's order of contended lines
-- (transfers, then writes, then accesses); ties broken by the group's own keys so the order
-- is total and every engine returns the same rows. {limit} is replaced by the row limit.
-- One text for every engine (docs/fleet.md): lineup's DataFusion, fleet/spark/lineup_fleet.py.
SELECT build, unit, "type",
       COUNT(DISTINCT host) AS hosts,
       SUM(transfers) AS transfers,
       SUM(lcl_hitm) + SUM(rmt_hitm) AS hitm,
       SUM(lcl_hitm) AS lcl_hitm, SUM(rmt_hitm) AS rmt_hitm,
       SUM(writes) AS writes, SUM(accesses) AS accesses,
       SUM(loads) AS loads, SUM(stores) AS stores, SUM(rmw) AS rmw,
       SUM(weight) AS weight
FROM host_rows
GROUP BY build, unit, "type"
ORDER BY transfers DESC, writes DESC, accesses DESC, build, unit, "type"
LIMIT {limit}
