// A lit sphere inside the point sprite: the normal from the sprite coordinate, a light from
// the upper left of the view, diffuse plus ambient plus a little specular; outside: discarded.
uniform float u_dim;          // 1 for the box, less for ghost images
varying vec3 v_rgb;

void main() {
    vec2 d = gl_PointCoord * 2.0 - 1.0;
    float r2 = dot(d, d);
    if (r2 > 1.0)
        discard;
    vec3 n = vec3(d.x, -d.y, sqrt(1.0 - r2));
    vec3 l = normalize(vec3(-0.4, 0.6, 0.7));
    float diffuse = max(dot(n, l), 0.0);
    float spec = pow(max(dot(reflect(-l, n), vec3(0.0, 0.0, 1.0)), 0.0), 24.0);
    vec3 c = v_rgb * (0.18 + 0.82 * diffuse) + 0.25 * spec;
    gl_FragColor = vec4(c * u_dim, 1.0);
}
