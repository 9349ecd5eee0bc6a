-- sqlite_workload.sql — the sqlite3 CLI workload of `make bench`.
-- An in-memory database filled by bulk inserts and by many small INSERT
-- statements (each parsed and prepared: that is where sqlite allocates),
-- then indexed, updated, queried and rebuilt. Deterministic: no random().
-- run (from a directory holding small_inserts.sql):
--   sqlite3 :memory: < bench/sqlite_workload.sql

PRAGMA cache_size = -65536;

CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                       city TEXT NOT NULL, score REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER NOT NULL,
                    item TEXT NOT NULL, qty INTEGER, price REAL, note TEXT);

-- bulk: 20k customers, 200k orders
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO customers
SELECT i, printf('customer-%06d', i), printf('city-%02d', (i * 7919) % 97),
       ((i * 104729) % 100000) / 100.0 FROM n;

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO orders
SELECT i, 1 + (i * 7907) % 20000, printf('item-%05d', (i * 31) % 5003),
       1 + i % 17, ((i * 613) % 10000) / 100.0,
       substr('lorem ipsum dolor sit amet consectetur adipiscing elit sed do',
              1 + i % 23, 8 + i % 37)
FROM n;

CREATE INDEX orders_customer ON orders(customer);
CREATE INDEX orders_item_qty ON orders(item, qty);
CREATE INDEX customers_city ON customers(city, score);

-- small statements: each one is parsed, planned and freed. bench/run.sh
-- generates small_inserts.sql (BEGIN; 30k INSERTs; COMMIT) in the working
-- directory it runs this from.
.read small_inserts.sql

UPDATE orders SET qty = qty + 1 WHERE customer % 7 = 0;
DELETE FROM orders WHERE id % 11 = 0;

SELECT city, count(*), round(sum(qty * price), 2)
FROM orders JOIN customers ON customers.id = orders.customer
GROUP BY city ORDER BY 3 DESC LIMIT 5;

SELECT item, count(DISTINCT customer) AS buyers FROM orders
GROUP BY item ORDER BY buyers DESC, item LIMIT 5;

SELECT c.name, o.item, o.qty FROM customers c
JOIN orders o ON o.customer = c.id
WHERE c.city = 'city-42' AND o.qty > 15 ORDER BY o.price DESC LIMIT 5;

REINDEX;
VACUUM;
SELECT count(*), sum(qty) FROM orders;
