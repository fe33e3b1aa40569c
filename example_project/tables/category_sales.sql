-- Units and revenue per product category and day.
SELECT category, order_date, SUM(quantity) AS units, SUM(amount) AS revenue
FROM {{ ref('order_items') }}
GROUP BY category, order_date
