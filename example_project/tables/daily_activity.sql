-- Events per day and kind.
SELECT CAST(event_at AS DATE) AS event_date, kind, COUNT(*) AS events,
       COUNT(DISTINCT customer_id) AS customers
FROM {{ ref('customer_events') }}
GROUP BY CAST(event_at AS DATE), kind
