-- One row per order line of a valid order, priced.
SELECT o.order_id, o.customer_id, o.order_date, l.line_no, p.product_id, p.category,
       l.quantity, p.unit_price, l.quantity * p.unit_price AS amount
FROM {{ ref('valid_orders') }} AS o
JOIN order_lines AS l ON l.order_id = o.order_id
JOIN products AS p ON p.product_id = l.product_id
