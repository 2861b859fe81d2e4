// Additive sprite with a soft gaussian profile (exp(-4 r^2) at radius r of the sprite).
varying vec3 v_light;

void main() {
    vec2 d = gl_PointCoord * 2.0 - 1.0;
    float r2 = dot(d, d);
    if (r2 > 1.0)
        discard;
    gl_FragColor = vec4(v_light * exp(-4.0 * r2), 1.0);
}
