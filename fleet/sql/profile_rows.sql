-- `lineup fleet profile --type $1` (of build $2 when $2 is not ''): rows alike in offset,
-- size, member and function add up into one access. CPU numbers of different hosts are not
-- one set of CPUs: the largest count is kept, and the CPU list only where every row gives
-- the same one.
SELECT "offset", size, member, function,
       SUM(loads) AS loads, SUM(stores) AS stores, SUM(rmw) AS rmw,
       SUM(lcl_hitm) AS lcl_hitm, SUM(rmt_hitm) AS rmt_hitm,
       SUM(lcl_peer) AS lcl_peer, SUM(rmt_peer) AS rmt_peer, SUM(weight) AS weight,
       MAX(cpu_count) AS cpu_count,
       CASE WHEN COUNT(DISTINCT cpu_list) = 1 AND COUNT(cpu_list) = COUNT(*)
            THEN MIN(cpu_list) END AS cpu_list
FROM rows
WHERE "type" = $1 AND ($2 = '' OR build = $2)
GROUP BY "offset", size, member, function
ORDER BY "offset" NULLS LAST, member NULLS LAST, function NULLS LAST, size NULLS LAST
