-- `lineup fleet top`, members: as top_types.sql, per build, unit, type, offset and member.
-- NULLS LAST is spelled out: engines differ in where they put nulls by default.
SELECT build, unit, "type", "offset", member,
       COUNT(DISTINCT host) AS hosts,
       SUM(transfers) AS transfers,
       SUM(lcl_hitm) + SUM(rmt_hitm) AS hitm,
       SUM(lcl_hitm) AS lcl_hitm, SUM(rmt_hitm) AS rmt_hitm,
       SUM(writes) AS writes, SUM(accesses) AS accesses,
       SUM(loads) AS loads, SUM(stores) AS stores, SUM(rmw) AS rmw,
       SUM(weight) AS weight
FROM host_rows
GROUP BY build, unit, "type", "offset", member
ORDER BY transfers DESC, writes DESC, accesses DESC, build, unit, "type",
         "offset" NULLS LAST, member NULLS LAST
LIMIT {limit}
