{{ config(target_lag='2 hours') }}
-- Revenue per customer, with their country.
SELECT c.customer_id, c.name, c.country,
       COUNT(DISTINCT i.order_id) AS orders, SUM(i.amount) AS revenue
FROM {{ ref('order_items') }} AS i
JOIN customers AS c ON c.customer_id = i.customer_id
GROUP BY c.customer_id, c.name, c.country
