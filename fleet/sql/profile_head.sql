-- `lineup fleet profile --type $1` (of build $2 when $2 is not ''): what the merged profile's
-- head needs, and whether its rows can be merged (one unit, one line size).
SELECT COUNT(DISTINCT unit) AS units, MIN(unit) AS unit,
       COUNT(DISTINCT cacheline_size) AS sizes, MIN(cacheline_size) AS cacheline_size,
       COUNT(DISTINCT host) AS hosts, COUNT(DISTINCT build) AS builds,
       COUNT(DISTINCT host_cpus) AS cpu_counts, MIN(host_cpus) AS host_cpus,
       COUNT(*) AS n
FROM rows
WHERE "type" = $1 AND ($2 = '' OR build = $2)
