-- Each customer's revenue rank within their country.
SELECT customer_id, name, country, revenue,
       RANK() OVER (PARTITION BY country ORDER BY revenue DESC) AS country_rank
FROM {{ ref('customer_revenue') }}
