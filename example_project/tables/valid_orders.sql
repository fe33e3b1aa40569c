-- Orders that count: cancelled ones are left out.
SELECT order_id, customer_id, status, ordered_at, CAST(ordered_at AS DATE) AS order_date
FROM orders
WHERE status <> 'cancelled'
