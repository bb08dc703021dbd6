
JÿÿyDÿÿyDÿÿyDÿÿyDÿÿyDÿÿyD