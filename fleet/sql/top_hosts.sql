-- `lineup fleet top`, first step: the store read once, summed per build, unit, type, offset,
-- member and host (of build $1 when $1 is not ''). Every engine keeps the answer as the table
-- `host_rows` (a few rows per host and member, however many profiles and days the store
-- holds), and top_types.sql and top_members.sql rank from it: one scan of the store for both.
SELECT CAST(build AS STRING) AS build, unit, "type", "offset", member, host,
       SUM(transfers) AS transfers,
       SUM(lcl_hitm) AS lcl_hitm, SUM(rmt_hitm) AS rmt_hitm,
       SUM(stores + rmw) AS writes, SUM(loads + stores + rmw) AS accesses,
       SUM(loads) AS loads, SUM(stores) AS stores, SUM(rmw) AS rmw,
       SUM(weight) AS weight
FROM rows
WHERE $1 = '' OR build = $1
GROUP BY build, unit, "type", "offset", member, host
