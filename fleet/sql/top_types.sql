-- `lineup fleet top`, types: cost summed per build, unit and type over every row (of build $1
-- when $1 is not ''), ranked by the profile model's order of contended lines (transfers, then
-- writes, then accesses); ties broken by the group's own keys so the order is total and every
-- engine returns the same rows. {limit} is replaced by the row limit before the text is run.
-- One text for every engine (docs/fleet.md): lineup's DataFusion, fleet/spark/lineup_fleet.py.
SELECT CAST(build AS STRING) AS build, unit, "type",
       COUNT(DISTINCT host) AS hosts,
       SUM(transfers) AS transfers,
       SUM(lcl_hitm) + SUM(rmt_hitm) AS hitm,
       SUM(lcl_hitm) AS lcl_hitm, SUM(rmt_hitm) AS rmt_hitm,
       SUM(stores + rmw) AS writes, SUM(loads + stores + rmw) AS accesses,
       SUM(loads) AS loads, SUM(stores) AS stores, SUM(rmw) AS rmw,
       SUM(weight) AS weight
FROM rows
WHERE $1 = '' OR build = $1
GROUP BY build, unit, "type"
ORDER BY transfers DESC, writes DESC, accesses DESC, build, unit, "type"
LIMIT {limit}
